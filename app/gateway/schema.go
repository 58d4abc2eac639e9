package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/warden-dev/warden/app/jcs"
)

// IdempotencyKey derives a call's key as DESIGN.md says: the SHA-256 hex of
// agent, NUL, tool, NUL and the RFC 8785 canonical JSON of the input. It
// names neither the model nor the provider, so a retry after the model
// router switched provider is still deduplicated.
func IdempotencyKey(agent, tool string, input map[string]any) (string, error) {
	if input == nil {
		input = map[string]any{}
	}
	b, err := jcs.Marshal(input)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// schemaMessage renders the first few leaf errors of a validation error as
// "path: message" phrases.
func schemaMessage(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	p := message.NewPrinter(language.English)
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(parts) >= 5 {
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := "$"
		for _, t := range e.InstanceLocation {
			path += "." + t
		}
		parts = append(parts, path+": "+e.ErrorKind.LocalizedString(p))
	}
	walk(ve)
	return strings.Join(parts, "; ")
}
