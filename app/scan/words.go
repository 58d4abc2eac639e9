package scan

import (
	"unicode"
	"unicode/utf8"
)

// The phrase matcher reads text as a sequence of normalized words, so that
// case, extra whitespace, markdown emphasis, invisible characters inside
// words and simple l33t spellings do not hide a phrase.

// maxWord is the longest normalized word kept; longer words never match.
const maxWord = 16

// word is one normalized word: ASCII letters in lower case, the digits
// 0 3 4 5 7 read as o e a s t and 1 as i (retried as l), '@' and '$'
// inside a word as a and s; apostrophes and invisible characters inside
// the word are dropped ("don't" is "dont", "ig\u200bnore" is "ignore").
type word struct {
	b    [maxWord]byte
	n    int
	end  int  // byte offset just after the word in the text
	ones bool // a '1' was read as 'i'
	long bool // longer than maxWord
}

func leet(c byte) byte {
	switch c {
	case '0':
		return 'o'
	case '1':
		return 'i'
	case '3':
		return 'e'
	case '4':
		return 'a'
	case '5':
		return 's'
	case '7':
		return 't'
	}
	return c
}

// readWord reads the word that starts at i (n is 0 if none does).
func readWord(s string, i int) word {
	var w word
	for i < len(s) {
		c := s[i]
		var m byte
		switch {
		case isLower(c):
			m = c
		case isUpper(c):
			m = c | 0x20
		case isDigit(c):
			m = leet(c)
			w.ones = w.ones || c == '1'
		case c == '\'' && w.n > 0 && i+1 < len(s) && isLetter(s[i+1]):
			i++
			continue
		case c == '@' && w.n > 0 && i+1 < len(s) && isLetter(s[i+1]):
			m = 'a'
		case c == '$' && w.n > 0 && i+1 < len(s) && isLetter(s[i+1]):
			m = 's'
		case c >= 0x80 && w.n > 0:
			r, size := utf8.DecodeRuneInString(s[i:])
			if isInvisible(r) || r == '\u2019' {
				i += size
				continue
			}
			w.end = i
			return w
		default:
			w.end = i
			return w
		}
		if w.n == maxWord {
			w.long = true // no phrase word is this long: stop reading
			w.end = i
			return w
		}
		w.b[w.n] = m
		w.n++
		i++
	}
	w.end = i
	return w
}

// skipSep skips what may separate the words of a phrase: whitespace
// (also literal \n and \t escapes), markdown emphasis and code marks,
// dashes, and invisible characters.
func skipSep(s string, i int) int {
	start := i
	for i < len(s) && i-start < 256 {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v',
			c == '*' || c == '_' || c == '~' || c == '`' || c == '-':
			i++
		case c == '\\' && i+1 < len(s) && isEscapeLetter(s[i+1]):
			i += 2
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsSpace(r) && !isInvisible(r) {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return i
}

// wordSet names a set of normalized words.
type wordSet uint8

const (
	setQuantifier wordSet = iota
	setDeterminer
	setAdjective
	setNoun
	setAfterEverything
	setPersona
	setModeName
	setAINoun
	setTell
	setTellFiller
	setUser
	setReveal
	setRevealAdj
	setRevealNoun
	setNewNoun
	setArticle
	setRole
)

func inSet(st wordSet, w string) bool {
	switch st {
	case setQuantifier:
		switch w {
		case "all", "any", "every", "each":
			return true
		}
	case setDeterminer:
		switch w {
		case "the", "your", "my", "these", "those", "our", "its", "their", "this", "that", "any":
			return true
		}
	case setAdjective:
		switch w {
		case "previous", "prior", "above", "preceding", "earlier", "former", "foregoing",
			"original", "initial", "system", "old", "existing", "current", "last",
			"hidden", "safety", "given", "developer", "default", "core", "base":
			return true
		}
	case setNoun:
		switch w {
		case "instructions", "instruction", "prompt", "prompts", "directions", "directives",
			"directive", "rules", "guidelines", "messages", "message", "context", "commands",
			"orders", "guidance", "constraints", "restrictions", "programming", "training",
			"policies", "policy", "guardrails":
			return true
		}
	case setAfterEverything:
		switch w {
		case "above", "before", "previously", "prior", "earlier", "else", "so":
			return true
		}
	case setPersona:
		switch w {
		case "dan", "unrestricted", "jailbroken", "uncensored", "unfiltered", "evil",
			"free", "freed", "unlocked", "liberated", "unbound", "rogue":
			return true
		}
	case setModeName:
		switch w {
		case "developer", "dan", "god", "jailbreak", "jailbroken", "unrestricted", "admin",
			"debug", "sudo", "root", "maintenance", "unfiltered", "uncensored":
			return true
		}
	case setAINoun:
		switch w {
		case "ai", "assistant", "model", "chatbot", "bot", "llm", "gpt", "persona",
			"character", "agent", "language":
			return true
		}
	case setTell:
		switch w {
		case "tell", "telling", "inform", "informing", "mention", "mentioning", "notify",
			"notifying", "alert", "alerting", "reveal", "revealing", "show", "showing",
			"let", "say", "saying", "warn", "warning":
			return true
		}
	case setTellFiller:
		switch w {
		case "this", "it", "anything", "to", "the", "about", "that", "any", "of", "these", "know":
			return true
		}
	case setUser:
		switch w {
		case "user", "users", "human", "humans", "operator":
			return true
		}
	case setReveal:
		switch w {
		case "reveal", "print", "output", "repeat", "leak", "show", "display", "disclose", "dump", "echo":
			return true
		}
	case setRevealAdj:
		switch w {
		case "system", "initial", "hidden", "original", "secret", "full", "entire", "developer":
			return true
		}
	case setRevealNoun:
		switch w {
		case "prompt", "instructions", "message":
			return true
		}
	case setNewNoun:
		switch w {
		case "instructions", "instruction", "directives", "directive":
			return true
		}
	case setArticle:
		switch w {
		case "a", "an", "the", "my", "your":
			return true
		}
	case setRole:
		switch w {
		case "system", "assistant", "human":
			return true
		}
	}
	return false
}

// in reports whether w is in st, reading each '1' as 'i' and then as 'l'.
func (w *word) in(st wordSet) bool {
	if w.n == 0 || w.long {
		return false
	}
	if inSet(st, string(w.b[:w.n])) {
		return true
	}
	return w.ones && inSet(st, string(w.asL()))
}

// is reports whether w is want, reading each '1' as 'i' or 'l'.
func (w *word) is(want string) bool {
	if w.n != len(want) || w.long {
		return false
	}
	for k := 0; k < w.n; k++ {
		if c := w.b[k]; c != want[k] && !(c == 'i' && want[k] == 'l' && w.ones) {
			return false
		}
	}
	return true
}

// asL returns the word with every 'i' read as 'l'; only the letters that
// came from a '1' should turn, but words that mix both are rare enough
// not to track them.
func (w *word) asL() []byte {
	b := w.b
	for k := 0; k < w.n; k++ {
		if b[k] == 'i' {
			b[k] = 'l'
		}
	}
	return b[:w.n]
}

// seq walks the words after a phrase's first word.
type seq struct {
	s    string
	pos  int // end of the last accepted word
	w    word
	read bool
}

func (q *seq) peek() *word {
	if !q.read {
		q.w = readWord(q.s, skipSep(q.s, q.pos))
		q.read = true
	}
	return &q.w
}

func (q *seq) take() {
	q.pos = q.w.end
	q.read = false
}

// accept takes the next word if it is in st.
func (q *seq) accept(st wordSet) bool {
	if q.peek().in(st) {
		q.take()
		return true
	}
	return false
}

// acceptWord takes the next word if it is want.
func (q *seq) acceptWord(want string) bool {
	if q.peek().is(want) {
		q.take()
		return true
	}
	return false
}
