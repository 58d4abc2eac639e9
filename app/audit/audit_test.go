package audit_test

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/audit"
	"github.com/warden-dev/warden/app/secret"
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

func newSealer(t *testing.T) *secret.Keyring {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	k, err := secret.NewKeyring(key)
	require.NoError(t, err)
	return k
}

func TestVerifyChainFromCheckpoint(t *testing.T) {
	t.Parallel()
	records := chain(10)
	s := newSealer(t)
	cut := records[3]
	cp, err := audit.SealCheckpoint(s, audit.Checkpoint{Tenant: "acme", Seq: cut.Seq, Hash: cut.Hash, Time: cut.Time, CutAt: cut.Time.Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, audit.CheckCheckpoint(s, cp))
	kinds := func(rep audit.Report) []string {
		var out []string
		for _, p := range rep.Problems {
			out = append(out, p.Kind)
		}
		return out
	}
	cases := []struct {
		name    string
		sealer  audit.Sealer
		cp      func() *audit.Checkpoint
		records []audit.Record
		kinds   []string
	}{
		{"after the cut", s, func() *audit.Checkpoint { return &cp }, records[4:], nil},
		{"everything cut", s, func() *audit.Checkpoint { c := cp; return &c }, records[4:4], []string{audit.ProblemTruncated}},
		{"without the checkpoint", s, func() *audit.Checkpoint { return nil }, records[4:], []string{audit.ProblemMissing}},
		{"checkpoint hash changed", s, func() *audit.Checkpoint {
			c := cp
			c.Hash = records[4].PrevHash[:63] + "0"
			return &c
		}, records[4:], []string{audit.ProblemCheckpoint, audit.ProblemReordered}},
		{"checkpoint moved forward", s, func() *audit.Checkpoint {
			c := cp
			c.Seq, c.Hash = records[6].Seq, records[6].Hash
			return &c
		}, records[7:], []string{audit.ProblemCheckpoint}},
		{"checkpoint of another tenant", s, func() *audit.Checkpoint { c := cp; c.Tenant = "other"; return &c }, records[4:], []string{audit.ProblemCheckpoint}},
		{"unsealed checkpoint", s, func() *audit.Checkpoint { c := cp; c.Seal = nil; return &c }, records[4:], []string{audit.ProblemCheckpoint}},
		{"another master key", newSealer(t), func() *audit.Checkpoint { return &cp }, records[4:], []string{audit.ProblemCheckpoint}},
		{"record after the cut missing", s, func() *audit.Checkpoint { return &cp }, records[5:], []string{audit.ProblemMissing}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := audit.VerifyChainFrom(tc.sealer, tc.cp(), tc.records, 10)
			require.Equal(t, tc.kinds, kinds(rep), "%+v", rep.Problems)
			require.Equal(t, tc.kinds == nil, rep.OK)
		})
	}
}
