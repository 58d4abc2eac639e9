package scan

import (
	"encoding/base64"
	"strings"
)

// token matches a secret recognized by its prefix at word start i: cloud
// and SaaS credentials, JWTs, Warden API keys, and the credential after
// "Bearer" or "Basic". It returns the end of the finding, or 0.
func (r *redactor) token(i int) int {
	s := r.s
	switch s[i] {
	case 'A':
		if hasPrefixAt(s, i, "AKIA") || hasPrefixAt(s, i, "ASIA") {
			return r.fixed(KindAWSKey, i, 20, isUpperOrDigit)
		}
		if hasPrefixAt(s, i, "AIza") {
			return r.fixed(KindGoogleAPIKey, i, 39, isB64URL)
		}
	case 'e':
		return r.jwt(i)
	case 'g':
		if hasPrefixAt(s, i, "github_pat_") {
			return r.prefixed(KindGitHubToken, i, 11, 30, isWordByte)
		}
		if i+4 <= len(s) && s[i+1] == 'h' && isOneOf(s[i+2], "opsur") && s[i+3] == '_' {
			return r.prefixed(KindGitHubToken, i, 4, 30, isAlnum)
		}
	case 'x':
		if i+5 <= len(s) && hasPrefixAt(s, i, "xox") && isOneOf(s[i+3], "abposr") && s[i+4] == '-' {
			return r.prefixed(KindSlackToken, i, 5, 10, isSlackByte)
		}
		if hasPrefixAt(s, i, "xapp-") {
			return r.prefixed(KindSlackToken, i, 5, 10, isSlackByte)
		}
	case 's', 'r':
		if i+8 <= len(s) && s[i+1] == 'k' && s[i+2] == '_' && (hasPrefixAt(s, i+3, "live_") || hasPrefixAt(s, i+3, "test_")) {
			return r.prefixed(KindStripeKey, i, 8, 10, isAlnum)
		}
		if s[i] == 's' && hasPrefixAt(s, i, "sk-") {
			return r.skKey(i)
		}
	case 'w':
		if hasPrefixAt(s, i, "wk_") {
			return r.prefixed(KindWardenKey, i, 3, 32, isB64URL)
		}
	case 'B', 'b':
		if hasPrefixFold(s, i, "bearer") {
			return r.bearer(i + 6)
		}
		if hasPrefixFold(s, i, "basic") {
			return r.basic(i + 5)
		}
	}
	return 0
}

func isUpperOrDigit(c byte) bool { return isUpper(c) || isDigit(c) }

func isSlackByte(c byte) bool { return isAlnum(c) || c == '-' }

// fixed matches exactly size bytes of class from i, not followed by a
// letter or digit.
func (r *redactor) fixed(k Kind, i, size int, class func(byte) bool) int {
	s := r.s
	j := runEnd(s, i, size, class)
	if j-i != size || (j < len(s) && isAlnum(s[j])) {
		return 0
	}
	return r.add(k, i, j)
}

// prefixed matches a prefix of plen bytes followed by at least minLen
// bytes of class.
func (r *redactor) prefixed(k Kind, i, plen, minLen int, class func(byte) bool) int {
	j := runEnd(r.s, i+plen, 1024, class)
	if j-(i+plen) < minLen {
		return 0
	}
	return r.add(k, i, j)
}

// skKey matches the "sk-" keys of OpenAI and similar APIs (sk-proj-...,
// sk-ant-...): at least 20 bytes after the prefix, with letters and digits.
func (r *redactor) skKey(i int) int {
	s := r.s
	if i < r.skUntil {
		return 0
	}
	j := runEnd(s, i+3, 1024, isB64URL)
	r.skUntil = j
	if j-(i+3) < 20 {
		return 0
	}
	letters, digits := false, false
	for k := i + 3; k < j; k++ {
		letters = letters || isLetter(s[k])
		digits = digits || isDigit(s[k])
	}
	if !letters || !digits {
		return 0
	}
	return r.add(KindAPIKey, i, j)
}

// jwt matches a compact JWS: three base64url segments, the first starting
// with "eyJ" (a JSON object). The signature may be empty ("alg": "none").
func (r *redactor) jwt(i int) int {
	s := r.s
	if !hasPrefixAt(s, i, "eyJ") || i < r.jwtUntil {
		return 0
	}
	j := runEnd(s, i, 8192, isB64URL)
	r.jwtUntil = j
	if j-i < 10 || j >= len(s) || s[j] != '.' {
		return 0
	}
	k := runEnd(s, j+1, 65536, isB64URL)
	if k-(j+1) < 10 || k >= len(s) || s[k] != '.' {
		return 0
	}
	m := runEnd(s, k+1, 8192, isB64URL)
	return r.add(KindJWT, i, m)
}

func isBearerByte(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '='
}

// bearer matches the credential after "Bearer" (RFC 6750 token68) at j.
// A token another detector knows keeps that detector's kind. Words such
// as "Bearer authentication" are not tokens: a token has letters and
// digits, or is long and mixes cases.
func (r *redactor) bearer(j int) int {
	s := r.s
	t := j
	for t < len(s) && (s[t] == ' ' || s[t] == '\t') && t-j < 8 {
		t++
	}
	if t == j || t >= len(s) {
		return 0
	}
	if s[t] != 'B' && s[t] != 'b' {
		if e := r.token(t); e > 0 {
			return e
		}
	}
	e := runEnd(s, t, 8192, isBearerByte)
	for e > t && (s[e-1] == '.' || s[e-1] == ',') {
		e--
	}
	var upper, lowerc, digit bool
	for k := t; k < e; k++ {
		upper = upper || isUpper(s[k])
		lowerc = lowerc || isLower(s[k])
		digit = digit || isDigit(s[k])
	}
	n := e - t
	if !(n >= 8 && digit && (upper || lowerc)) && !(n >= 20 && upper && lowerc) {
		return 0
	}
	return r.add(KindBearer, t, e)
}

// basic matches HTTP Basic credentials: base64 of "user:password".
func (r *redactor) basic(j int) int {
	s := r.s
	t := j
	for t < len(s) && (s[t] == ' ' || s[t] == '\t') && t-j < 8 {
		t++
	}
	if t == j {
		return 0
	}
	e := runEnd(s, t, 512, isB64Std)
	for e < len(s) && s[e] == '=' && e-t < 514 {
		e++
	}
	if e-t < 8 || e-t > 512 || (e < len(s) && isWordByte(s[e])) {
		return 0
	}
	var buf [384]byte
	n, err := base64.StdEncoding.Decode(buf[:], []byte(s[t:e]))
	if err != nil || strings.IndexByte(string(buf[:n]), ':') < 1 {
		return 0
	}
	return r.add(KindSecret, t, e)
}

func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// isValueEnd reports the bytes that end an unquoted value after a secret
// key.
func isValueEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ',', ';', '&', '\\', '}', ')', ']', '<', '>', '|':
		return true
	}
	return false
}

// keyValue matches the value after a key that names a secret, in the
// forms of env files, YAML, JSON (also escaped inside a string), query
// strings and headers: password=..., "client_secret": "...",
// X-Api-Key: .... The key itself stays.
func (r *redactor) keyValue(i, wordEnd int) int {
	s := r.s
	if !isLetter(s[i]) {
		return 0
	}
	k := wordEnd
	if k < len(s) && s[k] == '-' {
		k = runEnd(s, i, 64, isKeyByte) // x-api-key
	}
	if k-i < 6 || k-i > 64 || (k < len(s) && isKeyByte(s[k])) {
		return 0
	}
	j := k
	for q := 0; q < 2 && j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '\\'); q++ {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') && j-k < 8 {
		j++
	}
	if j >= len(s) || (s[j] != '=' && s[j] != ':') {
		return 0
	}
	j++
	if j < len(s) && (s[j] == '=' || s[j] == ':' || s[j] == '/') {
		return 0 // "==", "::", "://"
	}
	aws, ok := secretKey(s[i:k])
	if !ok {
		return 0
	}
	for v := j; j < len(s) && (s[j] == ' ' || s[j] == '\t') && j-v < 8; {
		j++
	}
	var quote byte
	switch {
	case j+1 < len(s) && s[j] == '\\' && (s[j+1] == '"' || s[j+1] == '\''):
		quote = s[j+1]
		j += 2
	case j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '`'):
		quote = s[j]
		j++
	}
	v, e := j, j
	if quote != 0 {
		for e < len(s) && e-v < 512 && s[e] != quote && s[e] != '\\' && s[e] != '\n' {
			e++
		}
	} else {
		for e < len(s) && e-v < 512 && !isValueEnd(s[e]) {
			e++
		}
	}
	if !secretValue(s[v:e]) {
		return 0
	}
	if isWordByte(s[v]) {
		if t := r.token(v); t > 0 {
			return t
		}
	}
	kind := KindSecret
	if aws && e-v == 40 && runEnd(s, v, 40, isAWSSecretByte) == e {
		kind = KindAWSSecret
	}
	return r.add(kind, v, e)
}

func isAWSSecretByte(c byte) bool { return isB64Std(c) || c == '=' }

// secretValue reports whether a value after a secret key is worth
// redacting: not empty, not a placeholder, reference or type name.
func secretValue(v string) bool {
	if len(v) < 3 || strings.HasPrefix(v, "[REDACTED:") || strings.HasPrefix(v, "-----BEGIN") {
		return false
	}
	switch v[0] {
	case '$', '<', '{', '%', '[':
		return false // $VAR, ${VAR}, <your-password>, {{ .Secret }}, %s
	}
	if strings.Trim(v, "*xX•.") == "" {
		return false // already masked
	}
	switch strings.ToLower(v) {
	case "null", "nil", "none", "true", "false", "undefined", "string", "str",
		"bool", "boolean", "int", "integer", "number", "object", "array",
		"required", "optional", "redacted", "hidden":
		return false
	}
	return true
}

// secretKey reports whether key names a secret: ignoring case, '_' and
// '-', it ends with one of the known suffixes. aws is true for
// ...secret_access_key, whose 40-byte values are AWS secret keys.
func secretKey(key string) (aws, ok bool) {
	if len(key) < 6 || len(key) > 64 {
		return false, false
	}
	for _, suffix := range [...]string{
		"password", "passwd", "passphrase", "secret", "apikey", "apisecret",
		"accesstoken", "refreshtoken", "authtoken", "apitoken", "sessiontoken",
		"bottoken", "privatekey", "secretkey", "secretaccesskey",
	} {
		if keySuffix(key, suffix) {
			return keySuffix(key, "secretaccesskey"), true
		}
	}
	return false, false
}

// keySuffix reports whether key ends with suffix (lower case), ignoring
// case and the '_' and '-' in key. It compares from the end, so most keys
// fail on their last letter.
func keySuffix(key, suffix string) bool {
	i := len(key) - 1
	for j := len(suffix) - 1; j >= 0; j-- {
		for i >= 0 && (key[i] == '_' || key[i] == '-') {
			i--
		}
		if i < 0 || lower(key[i]) != suffix[j] {
			return false
		}
		i--
	}
	return true
}

// isURLDelim reports the bytes that end the user or password of a URL's
// credentials.
func isURLDelim(c byte) bool {
	switch c {
	case '/', '@', '?', '#', ' ', '\t', '\n', '"', '\'':
		return true
	}
	return false
}

func isSchemeByte(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }

// urlCredentials matches the password of a URL with credentials,
// scheme://user:password@host, at word start i.
func (r *redactor) urlCredentials(i int) int {
	s := r.s
	k := runEnd(s, i, 32, isSchemeByte)
	if !hasPrefixAt(s, k, "://") {
		return 0
	}
	u := k + 3
	j := u
	for j < len(s) && j-u < 128 && !isURLDelim(s[j]) && s[j] != ':' {
		j++
	}
	if j == u || j >= len(s) || s[j] != ':' {
		return 0
	}
	p := j + 1
	e := p
	for e < len(s) && e-p < 256 && !isURLDelim(s[e]) {
		e++
	}
	if e == p || e >= len(s) || s[e] != '@' || strings.HasPrefix(s[p:e], "[REDACTED:") {
		return 0
	}
	return r.add(KindSecret, p, e)
}

// pem matches a PEM private key block from "-----BEGIN ... PRIVATE
// KEY-----" to its END line. A block cut off before its END line is
// matched over its body: lines of base64 and the Proc-Type and DEK-Info
// headers, with real or literal (\n) line breaks.
func (r *redactor) pem(i int) int {
	s := r.s
	if !hasPrefixAt(s, i, "-----BEGIN ") {
		return 0
	}
	ls := i + len("-----BEGIN ")
	le := strings.Index(s[ls:min(len(s), ls+64)], "-----")
	if le < 0 || !strings.Contains(s[ls:ls+le], "PRIVATE KEY") {
		return 0
	}
	body := ls + le + 5
	if r.pemNoEnd == 0 || body < r.pemNoEnd {
		if k := strings.Index(s[body:], "-----END "); k >= 0 {
			e := body + k + len("-----END ")
			if m := strings.Index(s[e:min(len(s), e+64)], "-----"); m >= 0 {
				return r.add(KindPrivateKey, i, e+m+5)
			}
			return r.add(KindPrivateKey, i, runEnd(s, e, 64, isPEMLabelByte))
		}
		r.pemNoEnd = body
	}
	return r.add(KindPrivateKey, i, pemBodyEnd(s, body))
}

func isPEMLabelByte(c byte) bool { return isUpper(c) || c == ' ' }

// pemBodyEnd returns the end of the PEM body lines starting at j.
func pemBodyEnd(s string, j int) int {
	end := j
	for j < len(s) {
		// One line break, real or escaped.
		switch {
		case s[j] == '\r' || s[j] == '\n':
			j++
			continue
		case s[j] == '\\' && j+1 < len(s) && (s[j+1] == 'n' || s[j+1] == 'r'):
			j += 2
			continue
		}
		k := j
		if hasPrefixAt(s, j, "Proc-Type:") || hasPrefixAt(s, j, "DEK-Info:") {
			for k < len(s) && s[k] != '\n' && s[k] != '\r' && s[k] != '\\' {
				k++
			}
		} else {
			for k < len(s) && (isB64Std(s[k]) || s[k] == '=') {
				k++
			}
			if k == j || (k < len(s) && s[k] != '\n' && s[k] != '\r' && s[k] != '\\') {
				break // not a whole line of base64
			}
		}
		end = k
		j = k
	}
	return end
}
