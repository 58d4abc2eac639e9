package scan

// Byte classes shared by the scanners. They look at ASCII only: every
// pattern the package knows starts and ends on an ASCII byte, so spans
// always fall on rune boundaries.

// byteClass holds the class bits of each byte (bytes from 0x80 have none):
// a table lookup is faster than the comparisons in the scanners' innermost
// loops.
const byteClass = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x00\x00\x00\x00\x00\x00" +
	"\x00\x12\x12\x12\x12\x12\x12\x02\x02\x02\x02\x02\x02\x02\x02\x02" +
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x00\x00\x00\x00\x08" +
	"\x00\x14\x14\x14\x14\x14\x14\x04\x04\x04\x04\x04\x04\x04\x04\x04" +
	"\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

const (
	classDigit = 1 << iota
	classUpper
	classLower
	classUnderscore
	classHex
)

func class(c byte) byte { return byteClass[c] }

func isDigit(c byte) bool { return c-'0' < 10 }

func isUpper(c byte) bool { return c-'A' < 26 }

func isLower(c byte) bool { return c-'a' < 26 }

func isLetter(c byte) bool { return class(c)&(classUpper|classLower) != 0 }

func isAlnum(c byte) bool { return class(c)&(classDigit|classUpper|classLower) != 0 }

// isWordByte reports the bytes of a word for the word-boundary rules:
// letters, digits and '_' (so snake_case identifiers are one word).
func isWordByte(c byte) bool {
	return class(c)&(classDigit|classUpper|classLower|classUnderscore) != 0
}

func isHex(c byte) bool { return class(c)&classHex != 0 }

func isB64URL(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

func isB64Std(c byte) bool { return isAlnum(c) || c == '+' || c == '/' }

func lower(c byte) byte {
	if isUpper(c) {
		return c | 0x20
	}
	return c
}

// isEscapeLetter reports the letters of the JSON and C escapes \n, \r and
// \t, which turn up literally in double-encoded tool output.
func isEscapeLetter(c byte) bool { return c == 'n' || c == 'r' || c == 't' }

// wordStart reports whether a word may start at i: the byte before is not
// a word byte, or it is the letter of a literal \n, \r or \t escape.
func wordStart(s string, i int) bool {
	if i == 0 || !isWordByte(s[i-1]) {
		return true
	}
	return i >= 2 && s[i-2] == '\\' && isEscapeLetter(s[i-1])
}

// wordEnd returns the end of the run of word bytes that starts at i.
func wordEnd(s string, i int) int {
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return i
}

// runEnd returns the end of the run of bytes in class that starts at i,
// looking at most max bytes ahead.
func runEnd(s string, i, max int, class func(byte) bool) int {
	limit := min(len(s), i+max)
	for i < limit && class(s[i]) {
		i++
	}
	return i
}

// hasPrefixFold reports whether s[i:] starts with prefix, ignoring ASCII
// case. prefix must be lower case.
func hasPrefixFold(s string, i int, prefix string) bool {
	if len(s)-i < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		if lower(s[i+k]) != prefix[k] {
			return false
		}
	}
	return true
}

// hasPrefixAt reports whether s[i:] starts with prefix.
func hasPrefixAt(s string, i int, prefix string) bool {
	return len(s)-i >= len(prefix) && s[i:i+len(prefix)] == prefix
}
