package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Options say what Apply does to a tool result. They mirror a Tool's
// spec.safety (redactPII, scanInjection, maxOutputBytes).
type Options struct {
	// RedactPII replaces personal data and secrets in every string with
	// typed placeholders.
	RedactPII bool `json:"redactPII,omitempty"`
	// Injection is the prompt-injection mode; the zero value is ModeOff
	// (WithDefaults makes it ModeFlag, the default of a Tool).
	Injection Mode `json:"scanInjection,omitempty"`
	// MaxBytes truncates a result whose canonical JSON is longer; 0 means
	// no limit.
	MaxBytes int64 `json:"maxOutputBytes,omitempty"`
}

// WithDefaults returns o with the defaults of a Tool's spec.safety filled
// in: injection scanning in ModeFlag.
func (o Options) WithDefaults() Options {
	if o.Injection == "" {
		o.Injection = ModeFlag
	}
	return o
}

// Validate reports every invalid field of o.
func (o Options) Validate() error {
	var errs []error
	if _, err := ParseMode(string(o.Injection)); err != nil {
		errs = append(errs, err)
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: maxBytes %d: must not be negative", ErrInvalidOptions, o.MaxBytes))
	}
	return errors.Join(errs...)
}

// Report is what Apply found and did. It never holds matched text.
type Report struct {
	// Counts counts findings by kind, personal data and injection alike;
	// nil when there are none.
	Counts map[Kind]int `json:"counts,omitempty"`
	// Injections lists the prompt-injection findings, ordered by path and
	// offset; offsets are in the original string at Path.
	Injections []PathFinding `json:"injections,omitempty"`
	// Blocked is true in ModeBlock when a finding of medium or high
	// severity was present: the result must not reach the model, and
	// Apply returned nil in its place.
	Blocked bool `json:"blocked,omitempty"`
	// Truncated is true when the result was longer than MaxBytes and was
	// replaced by the truncated shape (see Apply).
	Truncated bool `json:"truncated,omitempty"`
	// OriginalBytes is the length of the canonical JSON of the result
	// before truncation, when Truncated; -1 if the result had no JSON
	// encoding at all (then the truncated text is empty).
	OriginalBytes int64 `json:"originalBytes,omitempty"`
}

// PathFinding is a finding in a string inside a JSON value.
type PathFinding struct {
	// Path locates the string: "$" for the root, ".name" or "['odd
	// name']" for an object member, "[2]" for an array element, as in
	// $.items[2].body. Member names in paths are always redacted
	// (personal data, secrets and injections replaced by placeholders,
	// hidden characters dropped), whatever the options.
	Path string `json:"path"`
	// Key is true when the finding is in the member name at Path rather
	// than in its value.
	Key bool `json:"key,omitempty"`
	Finding
}

// TruncatedOverhead is the most a truncated result's canonical JSON can
// exceed MaxBytes by: the wrapper object around the text, when MaxBytes is
// smaller than the wrapper itself.
const TruncatedOverhead = len(`{"originalBytes":`) + 19 + len(`,"text":"`) + len(`","truncated":true}`)

// Apply scans and redacts a tool result v, a JSON value as encoding/json
// decodes it (map[string]any, []any, string, float64, json.Number, bool,
// nil; also int types, map[string]string and []string; any other type is
// first converted through encoding/json, and replaced by nil if it cannot
// be). It returns a new value and never modifies v or anything inside it.
//
// Every string is scanned: object member values and array elements, and
// object member names too. Injection scanning runs first (opts.Injection),
// then redaction (opts.RedactPII), so that text revealed by stripping
// hidden characters is still redacted. With RedactPII, a member whose name
// says it holds a secret (password, client_secret, apiKey, ...) has its
// string value replaced by "[REDACTED:SECRET]" whole. A member name that redaction
// changes is renamed; if two names collide, later ones (in sorted order of
// the original names) get "~2", "~3", ... appended. Numbers are not
// scanned.
//
// In ModeBlock, when the report says Blocked, the returned value is nil.
//
// When opts.MaxBytes > 0 and the canonical JSON (RFC 8785, package jcs) of
// the scanned result is longer than MaxBytes, the result is replaced by
//
//	{"originalBytes": N, "text": "<prefix of that JSON>", "truncated": true}
//
// where N is the full length and the text is the longest prefix, cut at a
// rune boundary and redacted again like any string, that keeps the
// canonical JSON of the whole object within MaxBytes (or within
// TruncatedOverhead bytes when MaxBytes is smaller than that).
func Apply(v any, opts Options) (any, Report) {
	w := walker{opts: opts, mode: opts.Injection}
	if _, err := ParseMode(string(w.mode)); err != nil {
		w.mode = ModeBlock // fail closed on a mode Validate would reject
	}
	out, _ := w.walk(v)
	rep := w.rep
	slices.SortStableFunc(rep.Injections, func(a, b PathFinding) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if a.Key != b.Key {
			if a.Key {
				return -1
			}
			return 1
		}
		return a.Start - b.Start
	})
	if rep.Blocked {
		return nil, rep
	}
	if opts.MaxBytes > 0 && w.bound > opts.MaxBytes {
		raw, err := canonical(out)
		if err != nil || int64(len(raw)) > opts.MaxBytes {
			n := int64(len(raw))
			if err != nil {
				n = -1
			}
			out = truncated(raw, n, opts.MaxBytes, w.sanitize)
			rep.Truncated = true
			rep.OriginalBytes = n
		}
	}
	return out, rep
}

// walker is one Apply call.
type walker struct {
	opts Options
	mode Mode
	rep  Report
	path []pathElem
	// bound is an upper bound of the length of the output's JSON, kept
	// while walking so that a result far below MaxBytes is never encoded:
	// strings count 6 bytes per byte (\u00xx), numbers 25.
	bound int64
}

// pathElem is one step of a JSON path: an object member or array index.
type pathElem struct {
	name  string
	index int
	isIdx bool
}

// walk returns the scanned copy of v, and whether it is a different value
// from v (a new container or a changed string) rather than v itself.
func (w *walker) walk(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		out := w.str(t, false, false)
		w.bound += 2 + 6*int64(len(out))
		if out == t {
			return v, false // the same string, without boxing it again
		}
		return out, true
	case map[string]any:
		if t == nil {
			return v, false
		}
		return w.object(t), true
	case []any:
		if t == nil {
			return v, false
		}
		w.bound += 1 + int64(len(t))
		out := make([]any, len(t))
		for i, e := range t {
			w.path = append(w.path, pathElem{index: i, isIdx: true})
			out[i], _ = w.walk(e)
			w.path = w.path[:len(w.path)-1]
		}
		return out, true
	case json.Number:
		w.bound += max(25, int64(len(t)))
		return v, false
	case nil, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		w.bound += 25
		return v, false
	case map[string]string:
		if t == nil {
			return map[string]any(nil), true
		}
		m := make(map[string]any, len(t))
		for k, s := range t {
			m[k] = s
		}
		return w.object(m), true
	case []string:
		if t == nil {
			return []any(nil), true
		}
		a := make([]any, len(t))
		for i, s := range t {
			a[i] = s
		}
		return w.walk(a)
	}
	// Some other Go value: scan what its JSON says, or drop it.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, true
	}
	out, _ := w.walk(g)
	return out, true
}

// object walks a JSON object. The copy starts as a clone of t (cheaper
// than inserting member by member) and gets the members that change;
// renamed members move to their new names once every name that stays is
// known.
func (w *walker) object(t map[string]any) map[string]any {
	w.bound += 1 + int64(len(t))
	out := maps.Clone(t)
	var renamed map[string]string
	var moved map[string]any
	for k, v := range t {
		w.path = append(w.path, pathElem{name: k})
		nk := w.str(k, true, false)
		nv, changed := w.member(k, v)
		w.path = w.path[:len(w.path)-1]
		w.bound += 3 + 6*int64(len(nk))
		if nk != k {
			if renamed == nil {
				renamed, moved = map[string]string{}, map[string]any{}
			}
			renamed[k], moved[k] = nk, nv
			continue
		}
		if changed {
			out[k] = nv
		}
	}
	if renamed == nil {
		return out
	}
	for k := range renamed {
		delete(out, k)
	}
	assignNames(out, renamed)
	for k, name := range renamed {
		out[name] = moved[k]
	}
	return out
}

// member walks the value of the member named k.
func (w *walker) member(k string, v any) (any, bool) {
	if s, ok := v.(string); ok {
		out := w.str(s, false, w.opts.RedactPII && isSecretKey(k))
		w.bound += 2 + 6*int64(len(out))
		if out == s {
			return v, false
		}
		return out, true
	}
	return w.walk(v)
}

// assignNames makes the new names of renamed members unique: a name taken
// by a member that keeps its name (in out), or by an earlier renamed
// member in sorted order of the original names, gets "~2", "~3", ...
// appended.
func assignNames(out map[string]any, renamed map[string]string) {
	olds := make([]string, 0, len(renamed))
	for k := range renamed {
		olds = append(olds, k)
	}
	slices.Sort(olds)
	taken := make(map[string]bool, len(renamed))
	for _, k := range olds {
		name := renamed[k]
		for n := 2; taken[name] || hasKey(out, name); n++ {
			name = renamed[k] + "~" + strconv.Itoa(n)
		}
		taken[name] = true
		renamed[k] = name
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func isSecretKey(k string) bool {
	_, ok := secretKey(k)
	return ok
}

// str runs the string pipeline on s at the current path: injection
// scanning, then redaction; isKey marks a member name, secretValue a value
// whose member name says it is a secret.
func (w *walker) str(s string, isKey, secret bool) string {
	if plainWord(s) && !secret {
		return s
	}
	out := s
	if w.mode != ModeOff {
		o, fs, blocked := ApplyInjection(s, w.mode)
		if blocked {
			w.rep.Blocked = true
		}
		if len(fs) > 0 {
			p := w.pathString()
			for _, f := range fs {
				w.count(f.Kind)
				w.rep.Injections = append(w.rep.Injections, PathFinding{Path: p, Key: isKey, Finding: f})
			}
		}
		out = o
	}
	if w.opts.RedactPII {
		if secret && secretValue(out) {
			w.count(KindSecret)
			return KindSecret.Placeholder()
		}
		o, fs := Redact(out)
		for _, f := range fs {
			w.count(f.Kind)
		}
		out = o
	}
	return out
}

// plainWord reports whether s is a short run of ASCII letters and digits
// ("id", "title", "open", "d73a4a"): no detector matches one of at most 8
// bytes (the shortest, a UK National Insurance number, has 9), so member
// names and enum values skip the scanners.
func plainWord(s string) bool {
	if len(s) > 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) {
			return false
		}
	}
	return true
}

// sanitize redacts the text of a truncated result like a string value,
// without counting: its content was counted where it came from.
func (w *walker) sanitize(s string) string {
	if w.mode == ModeRedact {
		s = redactInjection(s, ScanInjection(s))
	}
	if w.opts.RedactPII {
		s = RedactString(s)
	}
	return s
}

func (w *walker) count(k Kind) {
	if w.rep.Counts == nil {
		w.rep.Counts = map[Kind]int{}
	}
	w.rep.Counts[k]++
}

func (w *walker) pathString() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, e := range w.path {
		if e.isIdx {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		// Names are redacted whatever the options, so that a report never
		// carries text it found.
		name := RedactString(redactInjection(e.name, ScanInjection(e.name)))
		if isIdentifier(name) {
			b.WriteByte('.')
			b.WriteString(name)
			continue
		}
		b.WriteString("['")
		for i := 0; i < len(name); i++ {
			if c := name[i]; c == '\'' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(name[i])
		}
		b.WriteString("']")
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isWordByte(c) && c != '$' {
			return false
		}
	}
	return true
}
