package scan

import "strings"

func isTagNameByte(c byte) bool { return isAlnum(c) || c == '_' || c == ':' || c == '-' }

func isTokenNameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }

// angle matches markup that starts with '<' at i: chat-template tokens
// (<|im_start|>, <|system|>, <|eot_id|>), the Llama 2 <<SYS>> markers, the
// end-of-sequence </s>, tool-call tags (<tool_call>, <function_calls>,
// <invoke ...>, also with a namespace prefix) and role tags (<system>).
// It returns the end of the finding, or 0.
func (sc *injector) angle(i int) int {
	s := sc.s
	switch {
	case hasPrefixAt(s, i, "<|"):
		j := runEnd(s, i+2, 40, isTokenNameByte)
		if j > i+2 && hasPrefixAt(s, j, "|>") {
			return sc.add(KindRoleMarkup, SeverityHigh, i, j+2)
		}
		return 0
	case hasPrefixAt(s, i, "<<SYS>>"):
		return sc.add(KindRoleMarkup, SeverityHigh, i, i+7)
	case hasPrefixAt(s, i, "<</SYS>>"):
		return sc.add(KindRoleMarkup, SeverityHigh, i, i+8)
	case hasPrefixAt(s, i, "</s>"):
		// HTML has <s>...</s> (strikethrough); alone, </s> ends a turn.
		if sc.htmlStrike == 0 {
			sc.htmlStrike = 2
			if strings.Contains(s, "<s>") {
				sc.htmlStrike = 1
			}
		}
		sev := SeverityMedium
		if sc.htmlStrike == 1 {
			sev = SeverityLow
		}
		return sc.add(KindRoleMarkup, sev, i, i+4)
	}
	j := i + 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	e := runEnd(s, j, 48, isTagNameByte)
	if e == j || e >= len(s) || !isOneOf(s[e], "> \t\n\r/") {
		return 0
	}
	name := s[j:e]
	if k := strings.LastIndexByte(name, ':'); k >= 0 {
		name = name[k+1:]
	}
	var kind Kind
	var sev Severity
	switch strings.ToLower(name) {
	case "tool_call", "tool_calls", "function_call", "function_calls", "invoke",
		"tool_use", "tool_result", "tool_results", "function_results":
		kind, sev = KindToolCallMarkup, SeverityHigh
	case "system", "assistant", "im_start", "im_end", "system_prompt":
		kind, sev = KindRoleMarkup, SeverityMedium
	default:
		return 0
	}
	end := e
	if k := strings.IndexByte(s[e:min(len(s), e+256)], '>'); k >= 0 {
		end = e + k + 1
	}
	return sc.add(kind, sev, i, end)
}

// bracket matches [INST] and [/INST], then markdown links.
func (sc *injector) bracket(i int) int {
	s := sc.s
	if hasPrefixFold(s, i, "[inst]") {
		return sc.add(KindRoleMarkup, SeverityHigh, i, i+6)
	}
	if hasPrefixFold(s, i, "[/inst]") {
		return sc.add(KindRoleMarkup, SeverityHigh, i, i+7)
	}
	return sc.link(i, false)
}

// jsonToolCall matches a JSON member "tool_calls": or "function_call":
// (also "tool_call" and "function_calls"), plain or escaped inside a
// string, around the word at i..end.
func (sc *injector) jsonToolCall(i, end int) int {
	s := sc.s
	switch s[i:end] {
	case "tool_calls", "tool_call", "function_call", "function_calls":
	default:
		return 0
	}
	if i == 0 || s[i-1] != '"' {
		return 0
	}
	start := i - 1
	if start > 0 && s[start-1] == '\\' {
		start--
	}
	if start < sc.last {
		return 0
	}
	j := end
	if j < len(s) && s[j] == '\\' {
		j++
	}
	if j >= len(s) || s[j] != '"' {
		return 0
	}
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') && j-end < 16 {
		j++
	}
	if j >= len(s) || s[j] != ':' {
		return 0
	}
	return sc.add(KindToolCallMarkup, SeverityMedium, start, j+1)
}
