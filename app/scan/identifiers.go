package scan

import "net/netip"

// isLocalByte reports the bytes allowed in the local part of an e-mail
// address: the common subset of RFC 5322's atext, dots, and UTF-8 (RFC
// 6531).
func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-' || c >= 0x80
}

// email matches an address around the '@' at at: a local part of up to 64
// bytes and a domain of at least two labels whose last label (the TLD) is
// at least two ASCII letters; other labels may be internationalized.
// user@localhost and pkg@1.2.3 are not addresses.
// It returns the end of the address, or 0.
func (r *redactor) email(at int) int {
	s := r.s
	start := at
	for start > r.last && at-start < 64 && isLocalByte(s[start-1]) {
		start--
	}
	if start > r.last && isLocalByte(s[start-1]) {
		return 0 // local part longer than 64 bytes
	}
	for start < at && s[start]&0xC0 == 0x80 {
		start++ // not in the middle of a character
	}
	if start >= 1 && s[start-1] == '\\' && isEscapeLetter(s[start]) {
		start++ // the n of a literal \n escape before the address
	}
	for start < at && (s[start] == '.' || s[start] == '+' || s[start] == '-') {
		start++
	}
	if start == at || s[at-1] == '.' {
		return 0
	}
	// The domain: labels of letters, digits and inner hyphens.
	j := at + 1
	labels := 0
	tldStart := j
	for {
		k := j
		for k < len(s) && k-j < 63 && (isAlnum(s[k]) || s[k] == '-' || s[k] >= 0x80) {
			k++
		}
		if k == j || s[j] == '-' || s[k-1] == '-' {
			break
		}
		labels++
		tldStart = j
		j = k
		if j+1 < len(s) && s[j] == '.' && isAlnum(s[j+1]) {
			j++
			continue
		}
		break
	}
	if labels < 2 || j-tldStart < 2 {
		return 0
	}
	for k := tldStart; k < j; k++ {
		if !isLetter(s[k]) {
			return 0
		}
	}
	if j < len(s) && (isWordByte(s[j]) || s[j] == '-') {
		return 0
	}
	return r.add(KindEmail, start, j)
}

func isIPv6Byte(c byte) bool { return isHex(c) || c == ':' || c == '.' }

// ipv6 matches an IPv6 address (with at least two colons, so times and
// "a:b" pairs are out) starting at i, validated by net/netip, optionally
// with a zone (fe80::1%eth0). It returns the end, or 0.
func (r *redactor) ipv6(i int) int {
	s := r.s
	j := runEnd(s, i, 64, isIPv6Byte)
	colons, hex := 0, false
	for k := i; k < j; k++ {
		if s[k] == ':' {
			colons++
		} else if s[k] != '.' {
			hex = true
		}
	}
	if colons < 2 || !hex {
		return 0
	}
	for j > i && s[j-1] == '.' {
		j--
	}
	if j < len(s) && (isWordByte(s[j]) || s[j] == '-') {
		r.v6Fail = j
		return 0
	}
	a, err := netip.ParseAddr(s[i:j])
	if err != nil || !a.Is6() {
		r.v6Fail = j
		return 0
	}
	if j+1 < len(s) && s[j] == '%' && isAlnum(s[j+1]) {
		j = runEnd(s, j+1, 16, isAlnum)
	}
	return r.add(KindIP, i, j)
}

// ibanLengths lists each IBAN country code with its IBAN length (SWIFT
// IBAN registry).
const ibanLengths = "AD24AE23AL28AT20AZ28BA20BE16BG22BH22BI27BR29BY28CH21CR22CY28CZ24" +
	"DE22DJ27DK18DO28EE20EG29ES24FI18FK18FO18FR27GB22GE22GI23GL18GR27GT28" +
	"HN28HR21HU28IE22IL23IQ23IS26IT27JO30KW30KZ20LB28LC32LI21LT20LU20LV21" +
	"LY25MC27MD24ME22MK19MN20MR27MT31MU30NI28NL18NO15OM23PK24PL28PS29PT25" +
	"QA29RO24RS22RU33SA24SC31SD18SE24SI19SK24SM27SO23ST25SV28TL23TN24TR26" +
	"UA29VA22VG24XK20YE30"

func ibanLength(a, b byte) int {
	for k := 0; k+4 <= len(ibanLengths); k += 4 {
		if ibanLengths[k] == a && ibanLengths[k+1] == b {
			return int(ibanLengths[k+2]-'0')*10 + int(ibanLengths[k+3]-'0')
		}
	}
	return 0
}

// iban matches an IBAN in upper case, compact or in groups of four
// separated by single spaces, with its country's length and a valid
// ISO 7064 mod-97 check. It returns the end, or 0.
func (r *redactor) iban(i int) int {
	s := r.s
	if i+4 > len(s) || !isUpper(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) {
		return 0
	}
	want := ibanLength(s[i], s[i+1])
	if want == 0 {
		return 0
	}
	var buf [34]byte
	n := 0
	j := i
	for j < len(s) && n < want {
		c := s[j]
		switch {
		case isUpper(c) || isDigit(c):
			buf[n] = c
			n++
			j++
		case c == ' ' && n%4 == 0 && j+1 < len(s) && (isUpper(s[j+1]) || isDigit(s[j+1])):
			j++
		default:
			return 0
		}
	}
	if n != want || (j < len(s) && isWordByte(s[j])) {
		return 0
	}
	// Move the country code and check digits to the end, read letters as
	// 10..35, and take the number mod 97.
	rem := 0
	for k := 0; k < n; k++ {
		c := buf[(k+4)%n]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	if rem != 1 {
		return 0
	}
	return r.add(KindIBAN, i, j)
}

// nino matches a UK National Insurance number: two prefix letters (not
// D, F, I, Q, U or V, the second not O either, and not BG, GB, KN, NK, NT,
// TN or ZZ), six digits compact or in pairs, and a suffix A-D. It returns
// the end, or 0.
func (r *redactor) nino(i int) int {
	s := r.s
	if i+9 > len(s) {
		return 0
	}
	a, b := s[i], s[i+1]
	if !isUpper(b) || isOneOf(a, "DFIQUV") || isOneOf(b, "DFIOQUV") {
		return 0
	}
	switch uint16(a)<<8 | uint16(b) {
	case 'B'<<8 | 'G', 'G'<<8 | 'B', 'K'<<8 | 'N', 'N'<<8 | 'K', 'N'<<8 | 'T', 'T'<<8 | 'N', 'Z'<<8 | 'Z':
		return 0
	}
	j := i + 2
	spaced := j < len(s) && s[j] == ' '
	for pair := 0; pair < 3; pair++ {
		if spaced {
			if j >= len(s) || s[j] != ' ' {
				return 0
			}
			j++
		}
		if j+2 > len(s) || !isDigit(s[j]) || !isDigit(s[j+1]) {
			return 0
		}
		j += 2
	}
	if spaced && j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || s[j] < 'A' || s[j] > 'D' {
		return 0
	}
	j++
	if j < len(s) && isWordByte(s[j]) {
		return 0
	}
	return r.add(KindNationalID, i, j)
}

func isOneOf(c byte, set string) bool {
	for k := 0; k < len(set); k++ {
		if set[k] == c {
			return true
		}
	}
	return false
}
