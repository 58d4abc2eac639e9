package scan

import "testing"

// TestHeadLengthsCoverEveryHead keeps the prefilter in step with headOf:
// a head word the prefilter passes over would never be matched.
func TestHeadLengthsCoverEveryHead(t *testing.T) {
	t.Parallel()
	heads := []string{
		"ignore", "ignoring", "forget", "forgetting", "disregard", "disregarding",
		"override", "overriding", "bypass", "bypassing", "you", "youre", "act",
		"new", "updated", "revised", "real", "actual", "true", "secret", "hidden",
		"developer", "jailbreak", "jailbroken", "jailbreaking", "jailbreaks", "do",
		"dont", "never", "without", "reveal", "print", "output", "repeat", "leak",
		"show", "display", "disclose", "dump", "echo", "system", "assistant", "human",
	}
	for _, h := range heads {
		if headOf(h) == headNone {
			t.Errorf("headOf(%q) = none", h)
		}
		if !mayStartPhrase(h, 0, len(h)) {
			t.Errorf("prefilter passes over %q", h)
		}
	}
}
