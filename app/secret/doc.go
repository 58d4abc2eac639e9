// Package secret is Warden's secret broker: envelope encryption of Secret
// values at rest and the single place where a stored value turns back into
// plaintext.
//
// The master key (32 bytes, from WARDEN_MASTER_KEY or a key file, see
// LoadMasterKey) never encrypts a value directly. Each value gets a fresh
// random data key; the data key encrypts the value with AES-256-GCM and
// associated data that names the value's place (tenant, namespace, Secret
// name, key), and the master key wraps the data key. The sealed form
// carries a format version and the master key's id, so master key rotation
// (Rewrap, RotateSecrets) re-wraps only the 32-byte data keys and can tell
// old values from new ones.
//
// The files follow that structure:
//
//   - masterkey.go: LoadMasterKey and the Keyring built from master keys.
//   - envelope.go: Seal, Open and Rewrap of one value.
//   - broker.go: SealSecret (apply stores spec.sealed instead of spec.data)
//     and Broker.Resolve, the only function that returns plaintext.
//   - rotate.go: RotateSecrets re-wraps every stored Secret of every tenant.
//
// The package has no logger on purpose: nothing here may ever log a value,
// a data key or a master key.
package secret
