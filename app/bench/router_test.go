package bench

import (
	"slices"
	"testing"
)

// TestRouterPhases checks which pairs of phases --phases selects, and
// that an unknown name is refused with the names that exist.
func TestRouterPhases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phases []string
		runs   []string
		err    string
	}{
		{phases: nil, runs: RouterPhases},
		{phases: []string{"high"}, runs: []string{"high"}},
		{phases: []string{"stream", "low"}, runs: []string{"low", "stream"}},
		{phases: []string{"high", "p99"}, err: `unknown phase "p99": want some of low, high, saturation, stream`},
	} {
		o := RouterOptions{Phases: tc.phases}
		err := o.CheckPhases()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: error %v, want %q", tc.phases, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.phases, err)
		}
		var got []string
		for _, p := range RouterPhases {
			if o.runs(p) {
				got = append(got, p)
			}
		}
		if !slices.Equal(got, tc.runs) {
			t.Errorf("%v: runs %v, want %v", tc.phases, got, tc.runs)
		}
	}
}
