package scan_test

import (
	"strings"
	"testing"

	"github.com/warden-dev/warden/app/scan"
)

// Realistic secrets for the tests. None of them is live: the AWS pair is
// AWS's documentation example, the JWT is jwt.io's, the others are made up
// in the right shape.
const (
	awsKeyID     = "AKIAIOSFODNN7EXAMPLE"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	githubToken  = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	githubPAT    = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN"
	slackToken   = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	stripeKey    = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	googleKey    = "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"
	openAIKey    = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	jwtToken     = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	wardenKey    = "wk_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	privateKey   = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BjP5CE/Wm/Rr500P\n-----END RSA PRIVATE KEY-----"
	validIBAN    = "DE89 3704 0044 0532 0130 00"
	validCard    = "4111 1111 1111 1111"
	luhnFailCard = "4111 1111 1111 1112"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		// E-mail addresses.
		{"email", "contact alice.smith+tag@example.co.uk today", "contact [REDACTED:EMAIL] today"},
		{"email in angle brackets", "From: Bob <bob@mail.example.com>", "From: Bob <[REDACTED:EMAIL]>"},
		{"email after escaped newline", `line\nbob@example.org`, `line\n[REDACTED:EMAIL]`},
		{"email at sentence end", "write to ops@example.com.", "write to [REDACTED:EMAIL]."},
		{"internationalized email", "an josé@münchen.example.de schreiben", "an [REDACTED:EMAIL] schreiben"},
		{"no email: user@localhost", "ssh user@localhost", "ssh user@localhost"},
		{"no email: package version", "npm i left-pad@1.3.0", "npm i left-pad@1.3.0"},
		{"no email: mention", "thanks @alice and @bob.", "thanks @alice and @bob."},
		{"no email: decorator", "@app.route('/')", "@app.route('/')"},

		// Phone numbers.
		{"E.164 compact", "call +14155552671 now", "call [REDACTED:PHONE] now"},
		{"E.164 spaced with parentheses", "call +1 (415) 555-2671 now", "call [REDACTED:PHONE] now"},
		{"E.164 UK", "tel: +44 20 7946 0958", "tel: [REDACTED:PHONE]"},
		{"NANP parentheses", "(415) 555-2671", "[REDACTED:PHONE]"},
		{"NANP dashes", "phone 415-555-2671.", "phone [REDACTED:PHONE]."},
		{"NANP dots", "415.555.2671", "[REDACTED:PHONE]"},
		{"NANP with 1", "1-800-555-0199", "[REDACTED:PHONE]"},
		{"UK national", "ring 020 7946 0958 today", "ring [REDACTED:PHONE] today"},
		{"UK mobile", "07911 123456", "[REDACTED:PHONE]"},
		{"French national", "01 23 45 67 89", "[REDACTED:PHONE]"},
		{"international prefix 00", "Tel. 0044 20 7946 0958.", "Tel. [REDACTED:PHONE]."},
		{"no phone: ISO date", "due 2024-01-15", "due 2024-01-15"},
		{"no phone: ISO timestamp", "at 2024-01-15 10:30:00Z", "at 2024-01-15 10:30:00Z"},
		{"no phone: European date and time", "am 01.02.2024 12:00", "am 01.02.2024 12:00"},
		{"no phone: slashed date", "on 12/05/2024", "on 12/05/2024"},
		{"no phone: plain number", "order 4155552671 shipped", "order 4155552671 shipped"},
		{"no phone: sample 123-456-7890", "e.g. 123-456-7890", "e.g. 123-456-7890"},
		{"no phone: order id", "ORD-2024-000123", "ORD-2024-000123"},
		{"no phone: thousands", "1,234,567,890 rows", "1,234,567,890 rows"},
		{"no phone: short number", "room 42, floor 3", "room 42, floor 3"},

		// Payment cards.
		{"card spaced", "card " + validCard + " exp 12/27", "card [REDACTED:CARD] exp 12/27"},
		{"card dashed", "4111-1111-1111-1111", "[REDACTED:CARD]"},
		{"card compact", `"pan":"5555555555554444"`, `"pan":"[REDACTED:CARD]"`},
		{"card amex", "3782 822463 10005", "[REDACTED:CARD]"},
		{"card after a quantity", "qty 2 4111 1111 1111 1111", "qty 2 [REDACTED:CARD]"},
		{"no card: Luhn fails", "card " + luhnFailCard, "card " + luhnFailCard},
		{"no card: 16 digits failing Luhn", "id 4111111111111112", "id 4111111111111112"},
		{"no card: timestamp in ms", "ts 1718000000000000", "ts 1718000000000000"},
		{"no card: too many digits", "4111111111111111111111", "4111111111111111111111"},
		{"no card: glued to letters", "x4111111111111111", "x4111111111111111"},

		// IBANs.
		{"IBAN grouped", "IBAN " + validIBAN + ".", "IBAN [REDACTED:IBAN]."},
		{"IBAN compact", "GB82WEST12345698765432", "[REDACTED:IBAN]"},
		{"no IBAN: wrong check digits", "DE88 3704 0044 0532 0130 00", "DE88 3704 0044 0532 0130 00"},
		{"no IBAN: wrong length", "GB82WEST1234569876543", "GB82WEST1234569876543"},
		{"no IBAN: lower case", "de89370400440532013000", "de89370400440532013000"},

		// National ids.
		{"SSN", "SSN 123-45-6789", "SSN [REDACTED:NATIONAL_ID]"},
		{"SSN Woolworth", "078-05-1120", "[REDACTED:NATIONAL_ID]"},
		{"no SSN: area 000", "000-12-3456", "000-12-3456"},
		{"no SSN: area 666", "666-12-3456", "666-12-3456"},
		{"no SSN: area 9xx", "912-34-5678", "912-34-5678"},
		{"no SSN: group 00", "123-00-4567", "123-00-4567"},
		{"no SSN: serial 0000", "123-45-0000", "123-45-0000"},
		{"no SSN: plain nine digits", "123456789", "123456789"},
		{"NINO compact", "NI AB123456C", "NI [REDACTED:NATIONAL_ID]"},
		{"NINO spaced", "JG 10 37 52 A", "[REDACTED:NATIONAL_ID]"},
		{"no NINO: banned prefix", "GB123456A", "GB123456A"},
		{"no NINO: bad first letter", "QA123456C", "QA123456C"},
		{"no NINO: bad suffix", "AB123456E", "AB123456E"},

		// IP addresses.
		{"IPv4", "from 10.0.0.1 to 192.168.1.254:8080", "from [REDACTED:IP] to [REDACTED:IP]:8080"},
		{"IPv4 in URL", "http://172.16.0.5/admin", "http://[REDACTED:IP]/admin"},
		{"IPv4 CIDR", "10.0.0.0/8", "[REDACTED:IP]/8"},
		{"dotted quad in prose is an address", "version 1.2.3.4", "version [REDACTED:IP]"},
		{"no IPv4: version in word", "v1.2.3.4", "v1.2.3.4"},
		{"no IPv4: five parts", "oid 1.2.840.113549.1", "oid 1.2.840.113549.1"},
		{"no IPv4: octet above 255", "256.1.1.1", "256.1.1.1"},
		{"no IPv4: three parts", "Python 3.12.1", "Python 3.12.1"},
		{"IPv6", "addr 2001:db8::1 up", "addr [REDACTED:IP] up"},
		{"IPv6 full", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "[REDACTED:IP]"},
		{"IPv6 loopback", "bind ::1 ok", "bind [REDACTED:IP] ok"},
		{"IPv6 zone", "fe80::1%eth0", "[REDACTED:IP]"},
		{"no IPv6: time", "at 10:30:00", "at 10:30:00"},
		{"no IPv6: C++ scope", "std::vector<int>", "std::vector<int>"},
		{"no IPv6: MAC", "00:1A:2B:3C:4D:5E", "00:1A:2B:3C:4D:5E"},
		{"no IPv6: Haskell type", "f :: Int", "f :: Int"},

		// Secrets and tokens.
		{"AWS key id", "key " + awsKeyID, "key [REDACTED:AWS_KEY]"},
		{"AWS session key id", "ASIAY34FZKBOKMUTVV7A", "[REDACTED:AWS_KEY]"},
		{"AWS secret env", "aws_secret_access_key=" + awsSecret, "aws_secret_access_key=[REDACTED:AWS_SECRET]"},
		{"AWS secret JSON", `{"SecretAccessKey": "` + awsSecret + `"}`, `{"SecretAccessKey": "[REDACTED:AWS_SECRET]"}`},
		{"GitHub token", "token " + githubToken, "token [REDACTED:GITHUB_TOKEN]"},
		{"GitHub fine-grained token", githubPAT, "[REDACTED:GITHUB_TOKEN]"},
		{"Slack token", "SLACK_BOT_TOKEN=" + slackToken, "SLACK_BOT_TOKEN=[REDACTED:SLACK_TOKEN]"},
		{"Stripe key", stripeKey, "[REDACTED:STRIPE_KEY]"},
		{"Stripe restricted key", "rk_live_51H8abcDEF0123456789", "[REDACTED:STRIPE_KEY]"},
		{"Google API key", "key=" + googleKey + "&q=x", "key=[REDACTED:GOOGLE_API_KEY]&q=x"},
		{"OpenAI key", "OPENAI_API_KEY=" + openAIKey, "OPENAI_API_KEY=[REDACTED:API_KEY]"},
		{"private key", "key:\n" + privateKey + "\nend", "key:\n[REDACTED:PRIVATE_KEY]\nend"},
		{"private key cut off", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7", "[REDACTED:PRIVATE_KEY]"},
		{"JWT", "id_token=" + jwtToken, "id_token=[REDACTED:JWT]"},
		{"Bearer JWT", "Authorization: Bearer " + jwtToken, "Authorization: Bearer [REDACTED:JWT]"},
		{"Bearer opaque", "Authorization: Bearer ya29.a0AfH6SMBx3kq9", "Authorization: Bearer [REDACTED:BEARER]"},
		{"Basic auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:SECRET]"},
		{"Warden key", "WARDEN_TOKEN=" + wardenKey, "WARDEN_TOKEN=[REDACTED:WARDEN_KEY]"},
		{"password env", "DB_PASSWORD=hunter2!", "DB_PASSWORD=[REDACTED:SECRET]"},
		{"password YAML", "password: correct horse", "password: [REDACTED:SECRET] horse"},
		{"client secret JSON", `{"client_secret": "s3cr3t-value"}`, `{"client_secret": "[REDACTED:SECRET]"}`},
		{"secret in escaped JSON", `{\"api_key\":\"abc123xyz\"}`, `{\"api_key\":\"[REDACTED:SECRET]\"}`},
		{"header api key", "X-Api-Key: 9f8e7d6c5b4a", "X-Api-Key: [REDACTED:SECRET]"},
		{"URL credentials", "postgres://app:s3cret@db.internal:5432/app", "postgres://app:[REDACTED:SECRET]@db.internal:5432/app"},
		{"no secret: short prefix", "AKIA1234 ghp_short wk_test sk-learn", "AKIA1234 ghp_short wk_test sk-learn"},
		{"no secret: Bearer prose", "uses Bearer authentication", "uses Bearer authentication"},
		{"no secret: variable reference", "password: ${DB_PASSWORD}", "password: ${DB_PASSWORD}"},
		{"no secret: null", `"password": null`, `"password": null`},
		{"no secret: masked", "password=********", "password=********"},
		{"no secret: prose", "the password field is required", "the password field is required"},
		{"no secret: public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----"},
		{"no secret: JWT header only", "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9"},

		// Several at once, and placeholders left alone.
		{"mixed", "alice@example.com paid with " + validCard + " from 10.1.2.3", "[REDACTED:EMAIL] paid with [REDACTED:CARD] from [REDACTED:IP]"},
		{"placeholders are stable", "password=[REDACTED:SECRET] Bearer [REDACTED:JWT]", "password=[REDACTED:SECRET] Bearer [REDACTED:JWT]"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, fs := scan.Redact(tt.in)
			if got != tt.want {
				t.Fatalf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			checkFindings(t, tt.in, fs)
			if (got == tt.in) != (len(fs) == 0) {
				t.Fatalf("findings %v for unchanged text", fs)
			}
			if again, _ := scan.Redact(got); again != got {
				t.Fatalf("not idempotent: %q -> %q", got, again)
			}
			if rs := scan.RedactString(tt.in); rs != got {
				t.Fatalf("RedactString = %q, Redact = %q", rs, got)
			}
		})
	}
}

// TestRedactFindings checks kinds and byte offsets against the input.
func TestRedactFindings(t *testing.T) {
	t.Parallel()
	in := "mail bob@example.com, card " + validCard + ", key " + awsKeyID
	_, fs := scan.Redact(in)
	want := []struct {
		kind scan.Kind
		text string
	}{
		{scan.KindEmail, "bob@example.com"},
		{scan.KindCard, validCard},
		{scan.KindAWSKey, awsKeyID},
	}
	if len(fs) != len(want) {
		t.Fatalf("findings = %v, want %d", fs, len(want))
	}
	for i, w := range want {
		f := fs[i]
		if f.Kind != w.kind || in[f.Start:f.End] != w.text || f.Severity != scan.SeverityNone {
			t.Errorf("finding %d = %+v (%q), want %s %q", i, f, in[f.Start:f.End], w.kind, w.text)
		}
	}
}

// TestRedactCleanTextDoesNotAllocate is not parallel: AllocsPerRun
// refuses to run in a parallel test.
func TestRedactCleanTextDoesNotAllocate(t *testing.T) {
	clean := strings.Repeat("The build finished in 42 seconds on 2024-01-15; see https://ci.example.com/runs/1234 for logs. ", 20)
	allocs := testing.AllocsPerRun(50, func() {
		if out, fs := scan.Redact(clean); out != clean || fs != nil {
			t.Fatalf("clean text changed: %v", fs)
		}
	})
	if allocs != 0 {
		t.Fatalf("Redact allocated %.0f times on clean text", allocs)
	}
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	for k, want := range map[scan.Kind]string{
		scan.KindEmail:      "[REDACTED:EMAIL]",
		scan.KindPhone:      "[REDACTED:PHONE]",
		scan.KindCard:       "[REDACTED:CARD]",
		scan.KindIBAN:       "[REDACTED:IBAN]",
		scan.KindNationalID: "[REDACTED:NATIONAL_ID]",
		scan.KindIP:         "[REDACTED:IP]",
		scan.KindSecret:     "[REDACTED:SECRET]",
		scan.KindAWSKey:     "[REDACTED:AWS_KEY]",
		scan.KindJWT:        "[REDACTED:JWT]",
		scan.KindOverride:   "[REDACTED:INJECTION]",
		scan.KindZeroWidth:  "[REDACTED:INJECTION]",
	} {
		if got := k.Placeholder(); got != want {
			t.Errorf("%s.Placeholder() = %q, want %q", k, got, want)
		}
	}
}

// checkFindings checks the invariants every result holds: offsets inside
// the input, ordered, not overlapping, non-empty.
func checkFindings(t testing.TB, in string, fs []scan.Finding) {
	t.Helper()
	last := 0
	for _, f := range fs {
		if f.Start < last || f.End <= f.Start || f.End > len(in) {
			t.Fatalf("bad finding %+v after offset %d in %d bytes: %v", f, last, len(in), fs)
		}
		last = f.End
	}
}

// TestShortWordsHaveNoFindings backs the shortcut Apply takes for member
// names and values of at most 8 letters and digits: no detector matches
// one, so skipping the scanners changes nothing.
func TestShortWordsHaveNoFindings(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"AB123456", "AKIA1234", "12345678", "99999999", "ignore", "system", "jailbrea", "DE893704",
		"4111111", "deadbeef", "FFFFFFFF", "0", "wk", "eyJhbGci", "dan", "xoxb", "ghp", "act", "actas",
	} {
		if _, fs := scan.Redact(s); fs != nil {
			t.Errorf("Redact(%q) = %v", s, fs)
		}
		if fs := scan.ScanInjection(s); fs != nil {
			t.Errorf("ScanInjection(%q) = %v", s, fs)
		}
	}
}
