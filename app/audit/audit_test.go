package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
)

func chain(n int) []audit.Record {
	out := make([]audit.Record, n)
	prev := ""
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range out {
		r := audit.Record{Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Tenant: "acme",
			Actor: "apikey:admin", Verb: "get", Namespace: "default", Resource: "Agent/default/bot", Outcome: audit.OutcomeAllowed, PrevHash: prev}
		r.Hash = audit.ComputeHash(r)
		prev = r.Hash
		out[i] = r
	}
	return out
}

func TestVerifyChain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func([]audit.Record) []audit.Record
		head   int64
		kinds  []string
	}{
		{"intact", func(r []audit.Record) []audit.Record { return r }, 5, nil},
		{"modified field", func(r []audit.Record) []audit.Record { r[2].Outcome = audit.OutcomeDenied; return r }, 5, []string{audit.ProblemModified}},
		{"modified and rehashed", func(r []audit.Record) []audit.Record {
			r[2].Actor = "someone-else"
			r[2].Hash = audit.ComputeHash(r[2])
			return r
		}, 5, []string{audit.ProblemReordered}},
		{"removed in the middle", func(r []audit.Record) []audit.Record { return append(r[:2:2], r[3:]...) }, 5, []string{audit.ProblemMissing}},
		{"reordered", func(r []audit.Record) []audit.Record {
			r[1], r[3] = r[3], r[1]
			return r
		}, 5, []string{audit.ProblemReordered}},
		{"newest removed", func(r []audit.Record) []audit.Record { return r[:3] }, 5, []string{audit.ProblemTruncated}},
		{"everything removed", func(r []audit.Record) []audit.Record { return nil }, 5, []string{audit.ProblemTruncated}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := audit.VerifyChain(tc.tamper(chain(5)), tc.head)
			if tc.kinds == nil {
				require.True(t, rep.OK, "%+v", rep.Problems)
				return
			}
			require.False(t, rep.OK)
			got := map[string]bool{}
			for _, p := range rep.Problems {
				got[p.Kind] = true
				require.NotEmpty(t, p.Message)
			}
			for _, k := range tc.kinds {
				require.True(t, got[k], "want a %s problem, got %+v", k, rep.Problems)
			}
		})
	}
}
