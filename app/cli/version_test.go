package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadBuildVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		info *debug.BuildInfo
		want buildVersion
	}{
		{name: "no build information", want: buildVersion{Version: "(devel)", Commit: "unknown"}},
		{name: "release build", info: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			want: buildVersion{Version: "v1.2.3", Commit: "abc123", Time: "2026-01-01T00:00:00Z", GoVersion: "go1.26.0", Modified: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := readBuildVersion(func() (*debug.BuildInfo, bool) { return tc.info, tc.info != nil })
			require.Equal(t, tc.want, got)
		})
	}
	require.Contains(t, buildVersion{Version: "v1", Commit: "c", Modified: true, GoVersion: "go1"}.String(), "commit   c (modified)")
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	fx := setup(t)
	r := fx.run(t, nil, "", "version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "version  ")
	require.Contains(t, r.stdout, "go       "+runtime.Version())
}
