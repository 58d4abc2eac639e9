package scan

// The numeric detectors: IPv4 addresses, payment cards, phone numbers and
// US social security numbers. numeric collects a run of digit groups and
// their separators once, then tries each detector on consecutive groups,
// so that a scan never starts in the middle of a longer number (the "01"
// of "2024-01-15", the "1111" of a card).

// maxGroups bounds the groups of one run; a longer run is cut there and
// the rest scanned as a new run.
const maxGroups = 24

// group is one run of digits inside a numeric run.
type group struct {
	start, end  int  // the digits
	open, close int  // the group with its parentheses, if paren
	sep         byte // separator before the group: 0 for the first, ' ', '-', '.', '/'
	paren       bool // written as "(415)"
}

func (g group) digits() int { return g.end - g.start }

// isNumberSep reports the bytes that join the groups of a numeric run.
func isNumberSep(c byte) bool { return c == ' ' || c == '-' || c == '.' || c == '/' }

// numeric scans the run of digit groups that starts at i (a digit, '+' or
// '(') and reports what it finds. It returns where the scan continues, or
// i if the run holds nothing.
func (r *redactor) numeric(i int) int {
	s := r.s
	n := len(s)
	var gs [maxGroups]group
	ng := 0
	runStart := i
	plus := false
	j := i
	if s[j] == '+' {
		if j+1 >= n || !isDigit(s[j+1]) || (j > 0 && (isWordByte(s[j-1]) || s[j-1] == '+')) {
			return i
		}
		plus = true
		j++
	}
	if s[j] == '(' && j > 0 && isWordByte(s[j-1]) {
		return i
	}
	if !plus && isDigit(s[j]) {
		// Fast path: a lone group of fewer than 13 digits (most numbers
		// in text) can be nothing.
		k := j
		for k < n && isDigit(s[k]) {
			k++
		}
		if k-j < 13 && (k+1 >= n || !isNumberSep(s[k]) || !isDigit(s[k+1])) && (k >= n || s[k] != ' ' || k+2 >= n || s[k+1] != '(') {
			if k < n && (isLetter(s[k]) || s[k] == '_') {
				return i
			}
			return k
		}
	}
	var sep byte
	for ng < maxGroups && j < n {
		g := group{sep: sep, open: j}
		if s[j] == '(' {
			k := j + 1
			for k < n && isDigit(s[k]) {
				k++
			}
			if k == j+1 || k-j-1 > 4 || k >= n || s[k] != ')' {
				break
			}
			g.paren = true
			g.start, g.end, g.close = j+1, k, k+1
			j = k + 1
		} else {
			k := j
			for k < n && isDigit(s[k]) {
				k++
			}
			if k == j {
				break
			}
			if k < n && (isLetter(s[k]) || s[k] == '_') {
				break // glued to a word: "1abc" is not a number
			}
			g.start, g.end, g.close = j, k, k
			j = k
		}
		gs[ng] = g
		ng++
		// What joins this group to the next one.
		if j >= n {
			break
		}
		c := s[j]
		switch {
		case g.paren && c == ' ' && j+1 < n && isDigit(s[j+1]):
			sep = ' '
			j++
		case g.paren && isDigit(c):
			sep = ' ' // "(415)555-2671"
		case isNumberSep(c) && j+1 < n && isDigit(s[j+1]):
			sep = c
			j++
		case c == ' ' && j+2 < n && s[j+1] == '(' && isDigit(s[j+2]):
			sep = ' '
			j++
		default:
			j = -1
		}
		if j < 0 {
			break
		}
	}
	if ng == 0 {
		return i
	}
	if plus && gs[0].paren {
		return i
	}
	rs := run{r: r, gs: gs[:ng], plus: plus, start: runStart}
	// A run that touches a placeholder through a separator ("].0.0.0",
	// "2671.[") is read as joined to it, as it was to the text the
	// placeholder replaced, so that redacting twice changes nothing more.
	if !plus && !gs[0].paren && runStart >= 2 && isNumberSep(s[runStart-1]) && s[runStart-2] == ']' {
		gs[0].sep = s[runStart-1]
	}
	if e := gs[ng-1].close; e+1 < n && isNumberSep(s[e]) && s[e+1] == '[' {
		rs.tail = s[e]
	}
	rs.detect()
	end := gs[ng-1].close
	// The last group may start an IPv6 address ("... 0::1"), as it would
	// in a run of its own.
	if last := gs[ng-1]; rs.free < ng && r.last <= last.start && last.sep != '.' && end < n && s[end] == ':' && last.digits() <= 4 {
		if e := r.ipv6(last.start); e > 0 {
			return e
		}
	}
	if r.last > end {
		end = r.last
	}
	return end
}

// run is one numeric run being matched.
type run struct {
	r     *redactor
	gs    []group
	plus  bool
	start int  // the '+' of an international number, or the first group
	free  int  // the first group after the last match
	tail  byte // separator to a placeholder after the last group, or 0
}

// after returns the separator after group b-1: before group b, or the
// tail after the last group.
func (u *run) after(b int) byte {
	if b < len(u.gs) {
		return u.gs[b].sep
	}
	return u.tail
}

func (u *run) detect() {
	gs := u.gs
	for a := 0; a < len(gs); {
		b := a
		switch {
		case u.ipv4(a) > a:
			b = u.ipv4(a)
			u.r.add(KindIP, gs[a].start, gs[b-1].end)
		case a == 0 && u.plus:
			if b = u.international(); b > 0 {
				u.r.add(KindPhone, u.start, gs[b-1].close)
			}
		case u.ssn(a) > a:
			b = u.ssn(a)
			u.r.add(KindNationalID, gs[a].start, gs[b-1].end)
		case u.card(a) > a:
			b = u.card(a)
			u.r.add(KindCard, gs[a].start, gs[b-1].end)
		case a == u.free && u.phone(a) > a:
			// A phone number starts a run, or follows a match: the tail
			// of a longer number ("0532 0130 00" inside an account
			// number) is not one.
			b = u.phone(a)
			u.r.add(KindPhone, gs[a].open, gs[b-1].close)
		}
		if b > a {
			a = b
			u.free = b
			continue
		}
		a++
	}
}

// value returns the number written by g (at most 9 digits are meaningful
// to the callers).
func (u *run) value(g group) int {
	v := 0
	for k := g.start; k < g.end && k < g.start+9; k++ {
		v = v*10 + int(u.r.s[k]-'0')
	}
	return v
}

// ipv4 matches four groups joined by dots, each 0-255, when the dotted
// chain is exactly four long (so 1.2.3.4.5, an OID or a version with five
// parts, is not an address). It returns the group after the address.
func (u *run) ipv4(a int) int {
	gs := u.gs
	if a+4 > len(gs) || (gs[a].sep == '.') || u.plus && a == 0 {
		return a
	}
	for k := a; k < a+4; k++ {
		g := gs[k]
		if g.paren || g.digits() > 3 || (k > a && g.sep != '.') || u.value(g) > 255 {
			return a
		}
	}
	if u.after(a+4) == '.' {
		return a
	}
	return a + 4
}

// ssn matches a US social security number AAA-GG-SSSS, excluding the
// numbers the SSA never issues: area 000, 666 and 900-999, group 00 and
// serial 0000.
func (u *run) ssn(a int) int {
	gs := u.gs
	if a+3 > len(gs) || gs[a].sep == '-' {
		return a
	}
	g1, g2, g3 := gs[a], gs[a+1], gs[a+2]
	if g1.paren || g2.paren || g3.paren || g1.digits() != 3 || g2.digits() != 2 || g3.digits() != 4 || g2.sep != '-' || g3.sep != '-' {
		return a
	}
	if u.after(a+3) == '-' {
		return a
	}
	area, grp, serial := u.value(g1), u.value(g2), u.value(g3)
	if area == 0 || area == 666 || area >= 900 || grp == 0 || serial == 0 {
		return a
	}
	return a + 3
}

// card matches 13 to 19 digits, written as one group or as groups of at
// least three digits joined by the same separator (a space or a dash),
// that start like a payment card (2-6) and pass the Luhn check. It prefers
// the longest such span starting at group a.
func (u *run) card(a int) int {
	gs := u.gs
	s := u.r.s
	if gs[a].paren || gs[a].sep == '.' || gs[a].sep == '/' {
		return a
	}
	if first := s[gs[a].start]; first < '2' || first > '6' {
		return a
	}
	best := a
	digits := 0
	var sep byte
	for b := a; b < len(gs); b++ {
		g := gs[b]
		if g.paren {
			break
		}
		if b > a {
			if b == a+1 {
				sep = g.sep
				if sep != ' ' && sep != '-' {
					break
				}
			} else if g.sep != sep {
				break
			}
			if gs[a].digits() < 3 || g.digits() < 3 {
				break
			}
		}
		digits += g.digits()
		if digits > 19 {
			break
		}
		if digits >= 13 && u.luhn(a, b) {
			best = b + 1
		}
	}
	return best
}

// luhn runs the Luhn check over the digits of groups a..b.
func (u *run) luhn(a, b int) bool {
	s := u.r.s
	sum, double := 0, false
	for k := b; k >= a; k-- {
		g := u.gs[k]
		for p := g.end - 1; p >= g.start; p-- {
			d := int(s[p] - '0')
			if double {
				d *= 2
				if d > 9 {
					d -= 9
				}
			}
			sum += d
			double = !double
		}
	}
	return sum%10 == 0
}

// phone matches a national phone number written with separators: the
// North American 3-3-4 form with an optional leading 1 and parentheses
// around the area code, or 10 to 11 digits in groups of 2 to 6 starting
// with the trunk prefix 0 (020 7946 0958, 01 23 45 67 89, 07911 123456),
// or up to 17 after the international prefix 00.
// Plain digit runs, dates and anything joined by '/' are left alone.
func (u *run) phone(a int) int {
	if b := u.nanp(a); b > a {
		return b
	}
	return u.trunk(a)
}

func (u *run) nanp(a int) int {
	gs := u.gs
	s := u.r.s
	if gs[a].sep != 0 && gs[a].sep != ' ' {
		return a
	}
	k := a
	if !gs[k].paren && gs[k].digits() == 1 && s[gs[k].start] == '1' {
		k++ // the country code of "1-415-555-2671"
	}
	if k+3 > len(gs) {
		return a
	}
	area, exch, line := gs[k], gs[k+1], gs[k+2]
	if area.digits() != 3 || exch.digits() != 3 || line.digits() != 4 || exch.paren || line.paren {
		return a
	}
	// Area codes and exchanges never start with 0 or 1; this also keeps
	// the 123-456-7890 of sample data and most order numbers out.
	if s[area.start] < '2' || s[exch.start] < '2' {
		return a
	}
	if (k > a && area.sep == '/') || exch.sep == '/' || line.sep == '/' {
		return a
	}
	if sep := u.after(k + 3); sep != 0 && sep != ' ' {
		return a // "415-555-2671-99" is part of something longer
	}
	return k + 3
}

func (u *run) trunk(a int) int {
	gs := u.gs
	s := u.r.s
	if gs[a].sep != 0 && gs[a].sep != ' ' {
		return a
	}
	if s[gs[a].start] != '0' {
		return a
	}
	if u.date(a) {
		return a
	}
	// The international prefix 00 (0044 20 7946 0958) allows a whole
	// E.164 number after it.
	maxDigits := 11
	if gs[a].digits() >= 2 && s[gs[a].start+1] == '0' {
		maxDigits = 17
	}
	digits := 0
	best := a
	for b := a; b < len(gs); b++ {
		g := gs[b]
		if g.digits() < 2 || g.digits() > 6 || (b > a && (g.sep == '/' || g.paren)) {
			break
		}
		digits += g.digits()
		if digits > maxDigits {
			break
		}
		// The longest number that does not stop inside a longer one
		// ("0000 123-45-6789": not "0000 123").
		if sep := u.after(b + 1); b > a && digits >= 10 && (sep == 0 || sep == ' ') {
			best = b + 1
		}
	}
	return best
}

// date reports whether groups a, a+1, a+2 read as a day-month-year or
// year-month-day date.
func (u *run) date(a int) bool {
	gs := u.gs
	if a+3 > len(gs) {
		return false
	}
	g1, g2, g3 := gs[a], gs[a+1], gs[a+2]
	if g2.sep != g3.sep {
		return false
	}
	switch {
	case g1.digits() <= 2 && g2.digits() <= 2 && g3.digits() == 4:
		d, m := u.value(g1), u.value(g2)
		return (d >= 1 && d <= 31 && m >= 1 && m <= 12) || (m >= 1 && m <= 31 && d >= 1 && d <= 12)
	case g1.digits() == 4 && g2.digits() <= 2 && g3.digits() <= 2:
		m, d := u.value(g2), u.value(g3)
		return m >= 1 && m <= 12 && d >= 1 && d <= 31
	}
	return false
}

// international matches an E.164 number written with a leading '+': a
// country code 1-9, then 8 to 15 digits in all, with optional single
// separators and parentheses. It returns the group after the number, or 0.
func (u *run) international() int {
	gs := u.gs
	s := u.r.s
	if s[gs[0].start] == '0' {
		return 0
	}
	digits := 0
	best := 0
	for b := 0; b < len(gs); b++ {
		g := gs[b]
		if b > 0 && g.sep == '/' {
			break
		}
		if len(gs) > 1 && g.digits() > 12 {
			break
		}
		digits += g.digits()
		if digits > 15 {
			break
		}
		if digits >= 8 {
			best = b + 1
		}
	}
	return best
}
