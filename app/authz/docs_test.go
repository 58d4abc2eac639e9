package authz_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/authz"
)

// matrixTable renders the role × object matrix as docs/authz.md shows it:
// one row per object, one column per role, the allowed verbs in each cell.
func matrixTable() string {
	roles := authz.Roles()
	cells := map[string]map[string][]string{}
	for _, r := range roles {
		for _, p := range authz.Permissions(r) {
			if cells[p.Object] == nil {
				cells[p.Object] = map[string][]string{}
			}
			cells[p.Object][r] = append(cells[p.Object][r], p.Verb)
		}
	}
	objs := make([]string, 0, len(cells))
	for o := range cells {
		objs = append(objs, o)
	}
	sort.Strings(objs)
	var sb strings.Builder
	sb.WriteString("| object | " + strings.Join(roles, " | ") + " |\n|---|" + strings.Repeat("---|", len(roles)) + "\n")
	for _, o := range objs {
		sb.WriteString("| `" + o + "` |")
		for _, r := range roles {
			v := cells[o][r]
			sort.Strings(v)
			s := strings.Join(v, ", ")
			if s == "" {
				s = "–"
			}
			sb.WriteString(" " + s + " |")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// TestDocsMatrix keeps docs/authz.md's generated table equal to the code.
func TestDocsMatrix(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "authz.md"))
	require.NoError(t, err)
	want := matrixTable()
	require.True(t, strings.Contains(string(doc), want), "docs/authz.md must contain the generated matrix:\n%s", want)
}
