package workload

import (
	"github.com/gofiber/fiber/v2"
)

// JWKSPath is where every Warden process that issues tokens publishes its
// keys.
const JWKSPath = "/.well-known/jwks.json"

// JWK is one public key of a JWKS document (RFC 7517, RFC 8037 for OKP).
// The RSA and EC members are only read, from Kubernetes issuers.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	Kid string `json:"kid"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// JWKSet is a JWKS document.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// edJWK returns the JWK of an Ed25519 verification key.
func edJWK(k VerificationKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", Kid: k.ID, X: b64.EncodeToString(k.Public), Use: "sig", Alg: AlgEdDSA}
}

// JWKSHandler serves the issuer's JWKS: every key that still verifies,
// the active one first. Caches may keep it for 60 s; a verifier that meets
// an unknown kid refetches anyway (RemoteKeySource), so a new key is usable
// at once.
func (i *Issuer) JWKSHandler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		keys := i.verifyingKeys(c.UserContext())
		set := JWKSet{Keys: make([]JWK, len(keys))}
		for n, k := range keys {
			set.Keys[n] = edJWK(k)
		}
		c.Set(fiber.HeaderCacheControl, "public, max-age=60")
		return c.JSON(set)
	}
}
