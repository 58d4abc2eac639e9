package cli

import (
	"strings"

	"github.com/warden-dev/warden/app/resource"
)

// lookupKind resolves a KIND argument (plural, singular or Kind name, in
// any case) or returns a usage error that lists the known kinds.
func lookupKind(word string) (resource.KindInfo, error) {
	if k, ok := resource.LookupPath(word); ok {
		return k, nil
	}
	var names []string
	for _, k := range resource.Kinds() {
		names = append(names, k.Plural)
	}
	return resource.KindInfo{}, usagef("unknown resource kind %q; known kinds: %s", word, strings.Join(names, ", "))
}
