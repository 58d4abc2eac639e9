package scan

// Kind names what a finding is. For personal data and secrets the kind is
// also the label of the placeholder that replaces it: a KindEmail finding
// becomes "[REDACTED:EMAIL]". Every prompt-injection kind is replaced by
// the one placeholder "[REDACTED:INJECTION]".
type Kind string

// Personal data kinds, found by Redact.
const (
	KindEmail      Kind = "EMAIL"
	KindPhone      Kind = "PHONE"
	KindCard       Kind = "CARD"
	KindIBAN       Kind = "IBAN"
	KindNationalID Kind = "NATIONAL_ID"
	KindIP         Kind = "IP"
)

// Secret kinds, found by Redact. KindSecret is the generic one (a value
// after a key such as password= or client_secret:, or the credentials of a
// URL or of HTTP Basic auth); the others name the issuer of a token.
const (
	KindSecret       Kind = "SECRET"
	KindAWSKey       Kind = "AWS_KEY"
	KindAWSSecret    Kind = "AWS_SECRET"
	KindGitHubToken  Kind = "GITHUB_TOKEN"
	KindSlackToken   Kind = "SLACK_TOKEN"
	KindStripeKey    Kind = "STRIPE_KEY"
	KindGoogleAPIKey Kind = "GOOGLE_API_KEY"
	KindAPIKey       Kind = "API_KEY"
	KindPrivateKey   Kind = "PRIVATE_KEY"
	KindJWT          Kind = "JWT"
	KindBearer       Kind = "BEARER"
	KindWardenKey    Kind = "WARDEN_KEY"
)

// Prompt-injection kinds, found by ScanInjection.
const (
	// KindOverride is an instruction-override phrase ("ignore previous
	// instructions", "you are now DAN", "new instructions:").
	KindOverride Kind = "INSTRUCTION_OVERRIDE"
	// KindRoleMarkup is a chat-template token (<|im_start|>, [INST],
	// <<SYS>>, </s>), a role tag (<system>) or a fake role prefix at the
	// start of a line (system:, assistant:).
	KindRoleMarkup Kind = "ROLE_MARKUP"
	// KindToolCallMarkup is tool-call markup (<tool_call>, <function_calls>,
	// <invoke, a JSON "tool_calls" or "function_call" member).
	KindToolCallMarkup Kind = "TOOL_CALL_MARKUP"
	// KindUnicodeTag is a run of Unicode tag characters (U+E0000-U+E007F)
	// or of supplementary variation selectors (U+E0100-U+E01EF), both of
	// which can carry invisible ASCII.
	KindUnicodeTag Kind = "UNICODE_TAG"
	// KindZeroWidth is a run of zero-width characters (U+200B-U+200D,
	// U+2060-U+2064, U+180E, U+FEFF after the first byte).
	KindZeroWidth Kind = "ZERO_WIDTH"
	// KindBidiControl is a run of bidirectional embedding, override or
	// isolate controls (U+202A-U+202E, U+2066-U+2069).
	KindBidiControl Kind = "BIDI_CONTROL"
	// KindEncodedInjection is a base64 or hex blob that decodes to text
	// holding an injection of at least medium severity.
	KindEncodedInjection Kind = "ENCODED_INJECTION"
	// KindEncodedBlob is a long base64 blob (or hex that decodes to text)
	// with nothing suspicious inside: reported at low severity only.
	KindEncodedBlob Kind = "ENCODED_BLOB"
	// KindMarkdownImage is a markdown image whose URL could carry data
	// out when the image is rendered (a query string, a long path segment).
	KindMarkdownImage Kind = "MARKDOWN_IMAGE"
	// KindMarkdownLink is a markdown link whose URL carries long or
	// templated query values, or a javascript: URL.
	KindMarkdownLink Kind = "MARKDOWN_LINK"
	// KindDataURI is a data: URI.
	KindDataURI Kind = "DATA_URI"
)

// PlaceholderInjection replaces a prompt-injection finding in ModeRedact.
const PlaceholderInjection = "[REDACTED:INJECTION]"

// Placeholder returns the text that replaces a finding of kind k:
// "[REDACTED:" + k + "]" for personal data and secrets, and
// PlaceholderInjection for every injection kind.
func (k Kind) Placeholder() string {
	switch k {
	case KindEmail:
		return "[REDACTED:EMAIL]"
	case KindPhone:
		return "[REDACTED:PHONE]"
	case KindCard:
		return "[REDACTED:CARD]"
	case KindIBAN:
		return "[REDACTED:IBAN]"
	case KindNationalID:
		return "[REDACTED:NATIONAL_ID]"
	case KindIP:
		return "[REDACTED:IP]"
	case KindSecret:
		return "[REDACTED:SECRET]"
	case KindAWSKey:
		return "[REDACTED:AWS_KEY]"
	case KindAWSSecret:
		return "[REDACTED:AWS_SECRET]"
	case KindGitHubToken:
		return "[REDACTED:GITHUB_TOKEN]"
	case KindSlackToken:
		return "[REDACTED:SLACK_TOKEN]"
	case KindStripeKey:
		return "[REDACTED:STRIPE_KEY]"
	case KindGoogleAPIKey:
		return "[REDACTED:GOOGLE_API_KEY]"
	case KindAPIKey:
		return "[REDACTED:API_KEY]"
	case KindPrivateKey:
		return "[REDACTED:PRIVATE_KEY]"
	case KindJWT:
		return "[REDACTED:JWT]"
	case KindBearer:
		return "[REDACTED:BEARER]"
	case KindWardenKey:
		return "[REDACTED:WARDEN_KEY]"
	}
	if k.IsInjection() {
		return PlaceholderInjection
	}
	return "[REDACTED:" + string(k) + "]"
}

// IsInjection reports whether k is a prompt-injection kind rather than
// personal data or a secret.
func (k Kind) IsInjection() bool {
	switch k {
	case KindOverride, KindRoleMarkup, KindToolCallMarkup, KindUnicodeTag,
		KindZeroWidth, KindBidiControl, KindEncodedInjection, KindEncodedBlob,
		KindMarkdownImage, KindMarkdownLink, KindDataURI:
		return true
	}
	return false
}

// isHidden reports whether k is a run of invisible characters, which
// ModeRedact strips instead of replacing.
func (k Kind) isHidden() bool {
	return k == KindUnicodeTag || k == KindZeroWidth || k == KindBidiControl
}

// Severity ranks a prompt-injection finding. Personal data findings have
// SeverityNone. ModeRedact and ModeBlock act on SeverityMedium and above;
// SeverityLow findings are reported only, because the patterns behind them
// (a long base64 blob, "act as" inside a sentence, the word "jailbreak")
// are common in benign text.
type Severity uint8

// Severities, in increasing order.
const (
	SeverityNone Severity = iota
	SeverityLow
	SeverityMedium
	SeverityHigh
)

// String returns "none", "low", "medium" or "high".
func (s Severity) String() string {
	switch s {
	case SeverityLow:
		return "low"
	case SeverityMedium:
		return "medium"
	case SeverityHigh:
		return "high"
	}
	return "none"
}

// MarshalText encodes s as its String form, so reports read well as JSON.
func (s Severity) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// Finding is one match in a string: its kind, the byte offsets of the
// matched span in the input (Start inclusive, End exclusive) and, for
// prompt injection, a severity. It never holds the matched text, so a
// finding can be logged. Findings of one call are ordered by Start and do
// not overlap.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	Severity Severity `json:"severity,omitempty"`
}
