package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestMakePlan_defaultsAndEnv(t *testing.T) {
	t.Parallel()
	p, err := makePlan(Spec{Command: []string{"true"}, Env: map[string]string{"HOME": "/scratch/home", "TOKEN": "s3cret"}}, 7*time.Second, 99, false)
	require.NoError(t, err)
	require.Equal(t, 7*time.Second, p.spec.Timeout)
	require.Equal(t, int64(99), p.spec.MaxOutputBytes)
	require.Equal(t, []string{"HOME=/scratch/home", "LANG=C.UTF-8", "PATH=" + defaultPATH, "TMPDIR=/tmp", "TOKEN=s3cret"}, p.env)
	require.Empty(t, p.egress)
}

func TestMakePlan_binds(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, d := range []string{"data", "data/out", "other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(base, "data", "f.txt"), nil, 0o600))
	require.NoError(t, os.Symlink(filepath.Join(base, "other"), filepath.Join(base, "link")))

	p, err := makePlan(Spec{
		Command:    []string{"true"},
		AllowRead:  []string{filepath.Join(base, "data", "f.txt"), filepath.Join(base, "data") + "/", filepath.Join(base, "link")},
		AllowWrite: []string{filepath.Join(base, "data", "out"), filepath.Join(base, "data")},
	}, time.Second, 1, false)
	require.NoError(t, err)
	got := make([]string, 0, len(p.binds))
	for _, b := range p.binds {
		got = append(got, strings.TrimPrefix(b.dst, base)+map[bool]string{true: " rw", false: " ro"}[b.write])
	}
	// Parents before children; for the same path the writable bind last.
	require.Equal(t, []string{"/data ro", "/data rw", "/data/f.txt ro", "/data/out rw", "/link ro"}, got)
	i := slices.IndexFunc(p.binds, func(b bind) bool { return strings.HasSuffix(b.dst, "/link") })
	require.Equal(t, filepath.Join(base, "other"), p.binds[i].src, "symlinks are resolved on the host side only")
	require.True(t, p.binds[i].dir)
}

func TestMakePlan_rejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{name: "no command", spec: Spec{}, wantErr: "command: must name a program"},
		{name: "empty program", spec: Spec{Command: []string{""}}, wantErr: "command: must name a program"},
		{name: "NUL in argv", spec: Spec{Command: []string{"a", "b\x00"}}, wantErr: "command[1]"},
		{name: "negative timeout", spec: Spec{Command: []string{"a"}, Timeout: -1}, wantErr: "timeout"},
		{name: "negative memory", spec: Spec{Command: []string{"a"}, MemoryMB: -1}, wantErr: "memoryMB"},
		{name: "negative output cap", spec: Spec{Command: []string{"a"}, MaxOutputBytes: -1}, wantErr: "maxOutputBytes"},
		{name: "relative path", spec: Spec{Command: []string{"a"}, AllowRead: []string{"etc"}}, wantErr: "allowRead[0]: \"etc\" must be an absolute path"},
		{name: "root", spec: Spec{Command: []string{"a"}, AllowRead: []string{"/"}}, wantErr: "would expose too much"},
		{name: "host /tmp itself", spec: Spec{Command: []string{"a"}, AllowWrite: []string{"/tmp/"}}, wantErr: "would expose too much"},
		{name: "reserved /proc", spec: Spec{Command: []string{"a"}, AllowRead: []string{"/proc/self"}}, wantErr: "reserved"},
		{name: "reserved /dev", spec: Spec{Command: []string{"a"}, AllowWrite: []string{"/dev/null"}}, wantErr: "reserved"},
		{name: "reserved /scratch", spec: Spec{Command: []string{"a"}, AllowRead: []string{"/scratch/x"}}, wantErr: "reserved"},
		{name: "reserved stub dir", spec: Spec{Command: []string{"a"}, AllowRead: []string{stubDir}}, wantErr: "reserved"},
		{name: "missing path", spec: Spec{Command: []string{"a"}, AllowRead: []string{"/nonexistent-warden"}}, wantErr: "no such file"},
		{name: "reserved once cleaned", spec: Spec{Command: []string{"a"}, AllowRead: []string{"/etc/../dev/null"}}, wantErr: "reserved"},
		{name: "bad env name", spec: Spec{Command: []string{"a"}, Env: map[string]string{"": "x"}}, wantErr: `env[""]`},
		{name: "bad host", spec: Spec{Command: []string{"a"}, AllowHosts: []string{"http://x"}}, wantErr: "allowHosts[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := makePlan(tt.spec, time.Second, 1, false)
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestMakePlan_rejectsSpecialFiles(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	_, err := makePlan(Spec{Command: []string{"a"}, AllowRead: []string{fifo}}, time.Second, 1, false)
	require.ErrorIs(t, err, ErrInvalidSpec)
	require.ErrorContains(t, err, "neither a directory nor a regular file")
}

func TestBwrapArgs(t *testing.T) {
	t.Parallel()
	binds := []bind{{src: "/host/in", dst: "/in"}, {src: "/host/out", dst: "/out", write: true}}
	dirs := runDirs{scratch: "/run/x/scratch", tmp: "/run/x/tmp", egress: "/run/egress"}
	args := bwrapArgs([]string{"--ro-bind", "/usr", "/usr"}, true, "/bin/warden", dirs, binds)
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" --unshare-all --unshare-user ", " --cap-drop ALL ", " --die-with-parent ", " --new-session ",
		" --clearenv ", " --disable-userns ", " --info-fd 5 ", " --proc /proc ", " --dev /dev ",
		" --bind /run/x/scratch /scratch ", " --bind /run/x/tmp /tmp ", " --ro-bind /bin/warden /.sandbox/init ",
		" --ro-bind /run/egress /.sandbox/egress ", " --ro-bind /host/in /in ", " --bind /host/out /out ",
		" --chdir /scratch ",
	} {
		require.Contains(t, joined, want)
	}
	require.NotContains(t, joined, "--share-net")
	require.Equal(t, []string{"--", stubPath, initArg}, args[len(args)-3:])
	// The root is made read-only after everything is mounted into it, and
	// the Spec's binds come after /tmp so that host paths under /tmp land
	// inside the run's own /tmp.
	pos := func(s string) int { return strings.Index(joined, s) }
	require.Less(t, pos(" --bind /host/out /out "), pos(" --remount-ro / "))
	require.Less(t, pos(" --bind /run/x/tmp /tmp "), pos(" --ro-bind /host/in /in "))

	noEgress := strings.Join(bwrapArgs(nil, false, "/bin/warden", runDirs{scratch: "s", tmp: "t"}, nil), " ")
	require.NotContains(t, noEgress, egressDir)
	require.NotContains(t, noEgress, "--disable-userns")
}

func TestLandlockRules(t *testing.T) {
	t.Parallel()
	rules := landlockRules([]bind{{dst: "/in"}, {dst: "/out", write: true}})
	find := func(path string) pathRule {
		i := slices.IndexFunc(rules, func(r pathRule) bool { return r.Path == path })
		require.GreaterOrEqual(t, i, 0, path)
		return rules[i]
	}
	require.Equal(t, pathRule{Path: "/usr", Exec: true, Optional: true}, find("/usr"))
	require.Equal(t, pathRule{Path: "/etc", Optional: true}, find("/etc"))
	require.Equal(t, pathRule{Path: "/proc"}, find("/proc"))
	require.Equal(t, pathRule{Path: scratchPath, Write: true}, find(scratchPath))
	require.Equal(t, pathRule{Path: "/in", Exec: true}, find("/in"))
	require.Equal(t, pathRule{Path: "/out", Write: true}, find("/out"), "written files must not be executable")
	require.Equal(t, pathRule{Path: "/dev/null", Write: true, Device: true, Optional: true}, find("/dev/null"))
	for _, r := range rules {
		require.NotEqual(t, "/", r.Path)
		require.False(t, strings.HasPrefix(r.Path, stubDir), "the stub and the egress socket stay out of reach")
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	require.Equal(t, "bwrap", c.BwrapPath)
	require.Equal(t, DefaultTimeout, c.DefaultTimeout)
	require.Equal(t, int64(DefaultMaxOutputBytes), c.DefaultMaxOutputBytes)
	require.NotNil(t, c.Logger)
	require.NotNil(t, c.Now)
	require.NoError(t, c.Validate())

	err := Config{DefaultTimeout: -1, DefaultMaxOutputBytes: -1}.Validate()
	require.ErrorContains(t, err, "defaultTimeout")
	require.ErrorContains(t, err, "defaultMaxOutputBytes")
}
