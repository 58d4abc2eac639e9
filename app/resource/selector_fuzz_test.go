package resource

import "testing"

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{
		"", "app=web", "app==web,tier!=db", "env in (dev,prod)", "env notin (a)", "app", "!app",
		"spec.source=rest", "metadata.name=x, kind = Tool", "a in (b,c),d", "x in ()", "a=(b", ",,,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		canon := sel.String()
		again, err := ParseSelector(canon)
		if err != nil {
			t.Fatalf("String() %q of %q does not re-parse: %v", canon, s, err)
		}
		if again.String() != canon {
			t.Fatalf("String() is not stable: %q -> %q -> %q", s, canon, again.String())
		}
		_ = sel.Matches(&Object{Kind: "Tool", Metadata: ObjectMeta{Name: "a.b", Labels: map[string]string{"app": "web"}}, Spec: map[string]any{"source": "rest"}})
	})
}
