// Package scan is the output-safety step of the tool gateway. When a tool
// returns, the gateway decodes its JSON result and hands it to Apply with
// the Tool's spec.safety: redactPII (Options.RedactPII), scanInjection
// (Options.Injection) and maxOutputBytes (Options.MaxBytes). Apply returns
// a new value to pass to the model and a Report for the audit record;
// RedactString redacts a single string for log lines. The scanners are
// hand-written, allocation-free on clean text and linear in its length:
// they run on every tool result.
//
// # Personal data and secrets
//
// Redact replaces each finding with a typed placeholder and reports its
// kind and byte offsets, never the matched text:
//
//	[REDACTED:EMAIL]        e-mail addresses (also with UTF-8) with a dotted
//	                        domain and an ASCII TLD (not user@localhost, not
//	                        pkg@1.2.3)
//	[REDACTED:PHONE]        +E.164 numbers (8-15 digits, separators allowed);
//	                        North American 3-3-4 numbers with separators and
//	                        valid area and exchange codes; national numbers of
//	                        10-11 digits in groups, starting with trunk 0, or
//	                        up to 17 after the international prefix 00
//	[REDACTED:CARD]         13-19 digits, compact or grouped by spaces or
//	                        dashes, starting 2-6, passing the Luhn check
//	[REDACTED:IBAN]         upper-case IBANs, compact or in groups of four,
//	                        with the registry length of their country and a
//	                        valid mod-97 check
//	[REDACTED:NATIONAL_ID]  US SSNs AAA-GG-SSSS (not area 000, 666, 9xx,
//	                        group 00, serial 0000) and UK National Insurance
//	                        numbers; no other country's ids
//	[REDACTED:IP]           IPv4 (octets 0-255, exactly four parts) and IPv6
//	[REDACTED:SECRET]       the value after a key naming a secret (password,
//	                        passwd, passphrase, ...secret, api_key, access_token,
//	                        refresh_token, private_key, ... in env, YAML, JSON,
//	                        query and header syntax), URL credentials
//	                        (scheme://user:password@), HTTP Basic credentials
//	[REDACTED:AWS_KEY]      AWS access key ids (AKIA..., ASIA...)
//	[REDACTED:AWS_SECRET]   40-character values of ...secret_access_key
//	[REDACTED:GITHUB_TOKEN] ghp_, gho_, ghs_, ghu_, ghr_, github_pat_
//	[REDACTED:SLACK_TOKEN]  xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xapp-
//	[REDACTED:STRIPE_KEY]   sk_live_, rk_live_, sk_test_, rk_test_
//	[REDACTED:GOOGLE_API_KEY] AIza followed by 35 characters
//	[REDACTED:API_KEY]      OpenAI-style sk-... keys (also sk-proj-, sk-ant-)
//	[REDACTED:PRIVATE_KEY]  PEM private key blocks, also cut off before END
//	[REDACTED:JWT]          three base64url segments starting with eyJ
//	[REDACTED:BEARER]       the token after "Bearer" (unless it is one of the
//	                        kinds above, which keeps its own kind)
//	[REDACTED:WARDEN_KEY]   Warden API keys (wk_ and 32 or more characters)
//
// A dotted quad is an address even when it is a version number in prose
// ("version 1.2.3.4"), but not inside a word (v1.2.3.4) or a longer dotted
// sequence (1.2.840.113549.1). Dates, times, plain digit runs, thousands
// separators and order numbers such as ORD-2024-000123 are not phones.
// Redacting twice gives the same text as redacting once.
//
// # Prompt injection
//
// ScanInjection reports findings with a kind and a Severity:
//
//   - instruction-override phrases (KindOverride): "ignore/disregard/
//     forget/override/bypass [all] [the|your] [previous|prior|above|system]
//     instructions|prompt|rules...", "forget everything", "you are now DAN",
//     "new instructions:", "do anything now", "don't tell the user", "reveal
//     your system prompt", and at low severity "act as", "developer mode",
//     "jailbreak". Matching ignores case, extra whitespace, markdown
//     emphasis, invisible characters inside words and l33t digits;
//   - chat-template and role markup (KindRoleMarkup): <|im_start|> and other
//     <|...|> tokens, [INST], <<SYS>>, </s>, <system>, and role prefixes
//     (system:, assistant:, human:) at the start of a line;
//   - tool-call markup (KindToolCallMarkup): <tool_call>, <function_calls>,
//     <invoke ...> (with or without a namespace), and JSON "tool_calls": or
//     "function_call": members;
//   - hidden Unicode: tag characters and supplementary variation selectors
//     (KindUnicodeTag), zero-width characters (KindZeroWidth) and bidi
//     controls (KindBidiControl). Legitimate uses are not reported: a byte
//     order mark at the start, joiners between non-ASCII characters (emoji,
//     Indic and Persian text), the tag sequences of flag emoji;
//   - encoded payloads: base64 or hex blobs of 64 characters or more are
//     decoded (one level, at most 16 KiB) and scanned again; a payload with
//     an injection is KindEncodedInjection (high), other long base64 is
//     KindEncodedBlob (low); hex that decodes to binary (hashes) is skipped;
//   - exfiltration: markdown images whose URL has a query string or a long
//     opaque path segment (KindMarkdownImage, high when a query value is
//     long or templated), links with long or templated query values or a
//     javascript: URL (KindMarkdownLink), and data: URIs (KindDataURI, high
//     for HTML and JavaScript or a payload with an injection, low for raster
//     images).
//
// ApplyInjection applies a Mode: ModeOff does nothing; ModeFlag reports and
// leaves the text alone; ModeRedact replaces every finding of medium or high
// severity with [REDACTED:INJECTION] and strips hidden Unicode; ModeBlock
// reports that the result must be blocked when a finding of medium or high
// severity is present. Low-severity findings are only reported: they are
// common in benign text. A mode that ParseMode rejects acts as ModeBlock.
//
// # Walking a result
//
// Apply scans every string of a decoded JSON value, object member names
// included (a renamed member whose new name collides gets "~2", "~3", ...),
// and never modifies its input. Injection scanning runs before redaction,
// so that text revealed by stripping hidden characters is still redacted;
// a string value whose member name says it is a secret is replaced whole.
// Numbers, booleans and null pass unchanged. The Report counts findings by
// kind and lists injection findings with JSON paths ($.items[2].body)
// whose member names are always redacted. In ModeBlock a blocked result
// comes back as nil. A result whose canonical JSON (package jcs) is longer
// than MaxBytes becomes {"originalBytes": N, "text": "...", "truncated":
// true}, the text being the longest redacted prefix of that JSON, cut at a
// rune boundary, that keeps the whole object within MaxBytes (or within
// TruncatedOverhead bytes if MaxBytes is smaller).
//
// # Limits
//
// Pattern scanning is a heuristic. There are false negatives: names,
// postal addresses and birth dates are not detected; nor are phone numbers
// written without separators or a leading +, national ids other than the
// US and UK ones, lower-case IBANs, e-mail addresses with a non-ASCII TLD,
// cards or phones stored as JSON numbers, secrets without a known prefix
// or key, injections paraphrased, translated, split across strings,
// spelled with homoglyphs or encoded other than in base64 and hex (ROT13,
// URL encoding, nested encodings). There are false positives too: a
// 16-digit id that passes the Luhn check is a card, a dotted quad is an IP
// address, a sentence such as "You are now a member" is reported at low
// severity. Treat Redact as a safety net under tools that should not
// return such data in the first place, and ScanInjection as one signal
// among others: a clean scan does not make a result trustworthy.
package scan
