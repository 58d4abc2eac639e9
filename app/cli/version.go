package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what `warden version` reports, read from the build
// information the Go toolchain embeds in the binary.
type buildVersion struct {
	Version, Commit, Time, GoVersion string
	Modified                         bool
}

func readBuildVersion(read func() (*debug.BuildInfo, bool)) buildVersion {
	v := buildVersion{Version: "(devel)", Commit: "unknown"}
	bi, ok := read()
	if !ok {
		return v
	}
	v.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	commit := v.Commit
	if v.Modified {
		commit += " (modified)"
	}
	if v.Time != "" {
		commit += " " + v.Time
	}
	return fmt.Sprintf("version  %s\ncommit   %s\ngo       %s\n", v.Version, commit, v.GoVersion)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Warden's version, the commit it was built from and its Go version",
		Args:  exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(a.env.Stdout, readBuildVersion(debug.ReadBuildInfo))
			return err
		},
	}
}
