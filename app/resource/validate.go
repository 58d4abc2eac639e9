package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Name limits.
const (
	// MaxNameLength is the longest DNS-1123 label.
	MaxNameLength = 63
	// MaxToolNameLength bounds "<system>.<action>".
	MaxToolNameLength = 127
	// maxAnnotationsBytes bounds the total size of a resource's annotations,
	// as Kubernetes does.
	maxAnnotationsBytes = 256 * 1024
)

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	toolNamePart     = `[a-z0-9]([a-z0-9_-]*[a-z0-9])?`
	toolName         = regexp.MustCompile(`^` + toolNamePart + `\.` + toolNamePart + `$`)
	manifestName     = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)-g([1-9][0-9]*)$`)
	qualifiedName    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	secretKey        = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// IsDNS1123Label reports whether s is a DNS-1123 label: lower-case
// alphanumerics and '-', at most 63 characters, alphanumeric at both ends.
func IsDNS1123Label(s string) bool {
	return len(s) <= MaxNameLength && dns1123Label.MatchString(s)
}

// IsToolName reports whether s has the shape "<system>.<action>", each part
// matching [a-z0-9]([a-z0-9_-]*[a-z0-9])?.
func IsToolName(s string) bool {
	return len(s) <= MaxToolNameLength && toolName.MatchString(s)
}

// ManifestName returns the name of the CompiledAgentManifest of an agent's
// generation: "<agent>-g<generation>".
func ManifestName(agent string, generation int64) string {
	return agent + "-g" + strconv.FormatInt(generation, 10)
}

// ParseManifestName splits "<agent>-g<generation>"; false when name does
// not have that shape.
func ParseManifestName(name string) (agent string, generation int64, ok bool) {
	m := manifestName.FindStringSubmatch(name)
	if m == nil || len(m[1]) > MaxNameLength {
		return "", 0, false
	}
	g, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return m[1], g, true
}

// Validate checks o against its kind's JSON Schema and rules (apiVersion,
// names, DNS-1123, tool names <system>.<action>) and returns every field
// error at once; nil when valid. It does not resolve references to other
// resources: that is the compiler's job. Call Default first: Validate
// checks the object as it will be stored. When a rule and the schema find
// a problem at the same path, only the rule's (more specific) error is kept.
func Validate(o *Object) FieldErrors {
	if o == nil {
		return FieldErrors{{Path: "", Code: ErrCodeRequired, Message: "no object"}}
	}
	var errs FieldErrors
	add := func(path, code, format string, args ...any) {
		errs = append(errs, FieldError{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if o.Kind == "" {
		add("kind", ErrCodeRequired, "kind is required, e.g. kind: Agent")
	}
	info, known := LookupKind(o.Kind)
	if o.Kind != "" && !known {
		msg := fmt.Sprintf("unknown kind %q", o.Kind)
		if k, ok := LookupPath(o.Kind); ok {
			msg += fmt.Sprintf("; did you mean %q?", k.Kind)
		}
		add("kind", ErrCodeNotSupported, "%s", msg)
	}
	switch {
	case o.APIVersion == "":
		if known {
			add("apiVersion", ErrCodeRequired, "apiVersion is required: use %s for kind %s", info.APIVersion, info.Kind)
		} else {
			add("apiVersion", ErrCodeRequired, "apiVersion is required, e.g. %s", GroupVersion)
		}
	case known && o.APIVersion != info.APIVersion:
		add("apiVersion", ErrCodeInvalid, "apiVersion %q does not serve kind %s: use %s", o.APIVersion, info.Kind, info.APIVersion)
	}
	validateMeta(o, info, known, add)
	if known {
		validateRules(o, add)
		errs = mergeSchemaErrors(errs, schemaCheck(o))
	}
	slices.SortStableFunc(errs, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	if len(errs) == 0 {
		return nil
	}
	return errs
}

type addFunc func(path, code, format string, args ...any)

func validateMeta(o *Object, info KindInfo, known bool, add addFunc) {
	m := o.Metadata
	switch {
	case m.Name == "":
		add("metadata.name", ErrCodeRequired, "metadata.name is required")
	case known && o.Kind == KindTool:
		if !IsToolName(m.Name) {
			add("metadata.name", ErrCodeInvalid, "tool name %q must be <system>.<action>, each part lower-case alphanumerics, '_' or '-' (e.g. zendesk.search_tickets), at most %d characters", m.Name, MaxToolNameLength)
		}
	case known && o.Kind == KindCompiledAgentManifest:
		if _, _, ok := ParseManifestName(m.Name); !ok {
			add("metadata.name", ErrCodeInvalid, "manifest name %q must be <agent>-g<generation>, e.g. support-bot-g3", m.Name)
		}
	case len(m.Name) > MaxNameLength:
		add("metadata.name", ErrCodeTooLong, "name is %d characters; at most %d are allowed", len(m.Name), MaxNameLength)
	case !IsDNS1123Label(m.Name):
		add("metadata.name", ErrCodeInvalid, "name %q must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit", m.Name)
	}
	if known && !info.Namespaced && m.Namespace != "" {
		add("metadata.namespace", ErrCodeForbidden, "%s has tenant scope: remove metadata.namespace", info.Kind)
	} else if m.Namespace != "" && !IsDNS1123Label(m.Namespace) {
		add("metadata.namespace", ErrCodeInvalid, "namespace %q must be a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters", m.Namespace)
	}
	for _, k := range sortedKeys(m.Labels) {
		p := joinPath("metadata.labels", k)
		if msg := checkQualifiedName(k); msg != "" {
			add(p, ErrCodeInvalid, "label key %q %s", k, msg)
		}
		v := m.Labels[k]
		if len(v) > MaxNameLength {
			add(p, ErrCodeTooLong, "label value is %d characters; at most %d are allowed", len(v), MaxNameLength)
		} else if v != "" && !qualifiedName.MatchString(v) {
			add(p, ErrCodeInvalid, "label value %q must be empty or alphanumerics, '-', '_' or '.', starting and ending alphanumeric", v)
		}
	}
	total := 0
	for _, k := range sortedKeys(m.Annotations) {
		total += len(k) + len(m.Annotations[k])
		if msg := checkQualifiedName(k); msg != "" {
			add(joinPath("metadata.annotations", k), ErrCodeInvalid, "annotation key %q %s", k, msg)
		}
	}
	if total > maxAnnotationsBytes {
		add("metadata.annotations", ErrCodeTooLong, "annotations take %d bytes; at most %d are allowed", total, maxAnnotationsBytes)
	}
}

// checkQualifiedName checks a label or annotation key, "[prefix/]name" as in
// Kubernetes; it returns what is wrong, or "".
func checkQualifiedName(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !dns1123Subdomain.MatchString(prefix) {
		return "has an invalid prefix: it must be a DNS subdomain such as example.com"
	}
	if name == "" || len(name) > MaxNameLength || !qualifiedName.MatchString(name) {
		return "must be [prefix/]name where name is at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
	}
	return ""
}

// schemaCheck validates the whole object against its kind's JSON Schema.
func schemaCheck(o *Object) FieldErrors {
	set, err := compiledSchemas()
	if err != nil {
		return FieldErrors{{Path: "", Code: ErrCodeInvalid, Message: "schemas unavailable: " + err.Error()}}
	}
	sch := set.byKind[o.Kind]
	// Round-trip through JSON so the validator sees exactly what is stored,
	// whatever Go types the maps hold.
	b, err := json.Marshal(o)
	if err != nil {
		return FieldErrors{{Path: "spec", Code: ErrCodeInvalid, Message: "not encodable as JSON: " + err.Error()}}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return FieldErrors{{Path: "spec", Code: ErrCodeInvalid, Message: err.Error()}}
	}
	if err := sch.Validate(inst); err != nil {
		return set.schemaErrors(o.Kind, err)
	}
	return nil
}

// mergeSchemaErrors appends schema errors whose path no rule error already
// covers.
func mergeSchemaErrors(rules, schema FieldErrors) FieldErrors {
	seen := make(map[string]bool, len(rules))
	for _, e := range rules {
		seen[e.Path] = true
	}
	out := rules
	for _, e := range schema {
		if !seen[e.Path] {
			out = append(out, e)
			seen[e.Path] = true
		}
	}
	return out
}

// validateRules checks what a schema cannot say. It reads the generic spec
// defensively: fields of the wrong type are left to the schema.
func validateRules(o *Object, add addFunc) {
	s := o.Spec
	switch o.Kind {
	case KindAgent:
		validateAgent(s, add)
	case KindModel:
		checkURL(s, "endpoint", "spec.endpoint", add)
	case KindTool:
		validateTool(s, add)
	case KindMCPServer:
		transport := str(s, "transport")
		if transport == "" || transport == MCPTransportHTTP {
			if _, ok := s["url"]; !ok {
				add("spec.url", ErrCodeRequired, "an MCP server with transport http needs spec.url")
			} else {
				checkURL(s, "url", "spec.url", add)
			}
			if _, ok := s["command"]; ok {
				add("spec.command", ErrCodeInvalid, "spec.command is used only with transport stdio")
			}
		}
		if transport == MCPTransportStdio {
			if l, ok := s["command"].([]any); !ok || len(l) == 0 {
				add("spec.command", ErrCodeRequired, "an MCP server with transport stdio needs spec.command")
			}
		}
	case KindPolicy:
		validatePolicy(s, add)
	case KindDeployment:
		checkName(s, "environment", "spec.environment", add)
	case KindEnvironment:
		checkName(s, "promotesTo", "spec.promotesTo", add)
	case KindConversation:
		checkDuration(s, "retention", "spec.retention", add)
	case KindTenant:
		if r, ok := s["retention"].(map[string]any); ok {
			for _, k := range []string{"toolCalls", "events", "audit"} {
				checkDuration(r, k, "spec.retention."+k, add)
			}
		}
	case KindMemory:
		checkDuration(s, "ttl", "spec.ttl", add)
		checkURL(s, "endpoint", "spec.endpoint", add)
	case KindRAGIndex:
		if c, ok := s["chunking"].(map[string]any); ok {
			size, okS := asInt(c["size"])
			overlap, okO := asInt(c["overlap"])
			if okS && okO && overlap >= size {
				add("spec.chunking.overlap", ErrCodeInvalid, "overlap (%d) must be smaller than size (%d)", overlap, size)
			}
		}
	case KindKnowledgeSource:
		switch str(s, "type") {
		case "url", "git", "s3":
			if str(s, "url") == "" {
				add("spec.url", ErrCodeRequired, "a knowledge source of type %s needs spec.url", str(s, "type"))
			}
		case "inline":
			if docs, _ := s["documents"].([]any); str(s, "content") == "" && len(docs) == 0 {
				add("spec.content", ErrCodeRequired, "an inline knowledge source needs spec.content or spec.documents")
			}
		case "file":
			if str(s, "path") == "" {
				add("spec.path", ErrCodeRequired, "a knowledge source of type file needs spec.path")
			}
		}
	case KindNotificationChannel:
		validateNotificationChannel(s, add)
	case KindSecret:
		for _, field := range []string{"data", "sealed"} {
			d, ok := s[field].(map[string]any)
			if !ok {
				continue
			}
			for _, k := range sortedKeys(d) {
				if !secretKey.MatchString(k) || len(k) > 253 {
					add(joinPath("spec."+field, k), ErrCodeInvalid, "secret key %q must be alphanumerics, '-', '_' or '.'", k)
				}
			}
		}
	case KindToolCall:
		if r, ok := s["toolRef"].(map[string]any); ok {
			if n := str(r, "name"); n != "" && !IsToolName(n) {
				add("spec.toolRef.name", ErrCodeInvalid, "tool name %q must be <system>.<action>", n)
			}
		}
	case KindCompiledAgentManifest:
		a, _ := s["agent"].(map[string]any)
		agent := str(a, "name")
		gen, okG := asInt(a["generation"])
		if agent != "" && okG && o.Metadata.Name != "" && o.Metadata.Name != ManifestName(agent, gen) {
			add("metadata.name", ErrCodeInvalid, "manifest name must be %q (spec.agent.name and spec.agent.generation)", ManifestName(agent, gen))
		}
	}
}

func validateAgent(s map[string]any, add addFunc) {
	if mr, ok := s["modelRoute"].(map[string]any); ok {
		checkName(mr, "primary", "spec.modelRoute.primary", add)
		checkNameList(mr, "fallback", "spec.modelRoute.fallback", add)
	}
	if tools, ok := s["tools"].([]any); ok {
		seen := map[string]int{}
		for i, t := range tools {
			tm, ok := t.(map[string]any)
			if !ok {
				continue
			}
			p := fmt.Sprintf("spec.tools[%d].name", i)
			n := str(tm, "name")
			if n == "" {
				continue
			}
			if !IsToolName(n) {
				add(p, ErrCodeInvalid, "tool name %q must be <system>.<action>, e.g. zendesk.search_tickets", n)
			}
			if j, dup := seen[n]; dup {
				add(p, ErrCodeDuplicate, "tool %q is already listed at spec.tools[%d]", n, j)
			} else {
				seen[n] = i
			}
		}
	}
	if servers, ok := s["mcpServers"].([]any); ok {
		seen := map[string]int{}
		for i, t := range servers {
			tm, ok := t.(map[string]any)
			if !ok {
				continue
			}
			p := fmt.Sprintf("spec.mcpServers[%d].name", i)
			checkName(tm, "name", p, add)
			n := str(tm, "name")
			if j, dup := seen[n]; dup && n != "" {
				add(p, ErrCodeDuplicate, "MCP server %q is already listed at spec.mcpServers[%d]", n, j)
			} else {
				seen[n] = i
			}
		}
	}
	if m, ok := s["memory"].(map[string]any); ok {
		checkName(m, "working", "spec.memory.working", add)
		checkNameList(m, "knowledge", "spec.memory.knowledge", add)
		if l, ok := m["knowledge"].([]any); ok {
			seen := map[string]int{}
			for i, e := range l {
				n, _ := e.(string)
				if j, dup := seen[n]; dup && n != "" {
					add(fmt.Sprintf("spec.memory.knowledge[%d]", i), ErrCodeDuplicate, "RAG index %q is already listed at spec.memory.knowledge[%d]", n, j)
				} else {
					seen[n] = i
				}
			}
		}
	}
	checkNameList(s, "policies", "spec.policies", add)
}

func validateTool(s map[string]any, add addFunc) {
	source := str(s, "source")
	blocks := map[string]string{ToolSourceREST: "rest", ToolSourceMCP: "mcp", ToolSourceOS: "os"}
	for _, src := range []string{ToolSourceREST, ToolSourceMCP, ToolSourceOS} {
		field := blocks[src]
		if _, ok := s[field]; ok && source != "" && source != src {
			add("spec."+field, ErrCodeInvalid, "spec.%s is used only when spec.source is %s (source is %s)", field, src, source)
		}
	}
	switch source {
	case ToolSourceREST:
		r, _ := s["rest"].(map[string]any)
		if str(r, "url") == "" {
			add("spec.rest.url", ErrCodeRequired, "a tool with source rest needs spec.rest.url")
		} else {
			checkURL(r, "url", "spec.rest.url", add)
		}
		checkDuration(r, "timeout", "spec.rest.timeout", add)
	case ToolSourceMCP:
		m, _ := s["mcp"].(map[string]any)
		if str(m, "server") == "" {
			add("spec.mcp.server", ErrCodeRequired, "a tool with source mcp needs spec.mcp.server (an MCPServer name)")
		} else {
			checkName(m, "server", "spec.mcp.server", add)
		}
		if str(m, "tool") == "" {
			add("spec.mcp.tool", ErrCodeRequired, "a tool with source mcp needs spec.mcp.tool (the tool's name on the server)")
		}
	case ToolSourceOS:
		m, _ := s["os"].(map[string]any)
		if l, ok := m["command"].([]any); !ok || len(l) == 0 {
			add("spec.os.command", ErrCodeRequired, "a tool with source os needs spec.os.command")
		}
		checkDuration(m, "timeout", "spec.os.timeout", add)
	}
	checkURL(s, "gatewayUrl", "spec.gatewayUrl", add)
	for _, f := range []string{"inputSchema", "outputSchema"} {
		if sch, ok := s[f].(map[string]any); ok {
			if err := compileUserSchema(sch); err != nil {
				add("spec."+f, ErrCodeInvalid, "not a valid JSON Schema: %v", err)
			}
		}
	}
}

// compileUserSchema checks that a tool's schema is itself a valid JSON
// Schema (draft 2020-12 unless it says otherwise). Remote references are
// not fetched.
func compileUserSchema(sch map[string]any) error {
	b, err := json.Marshal(sch)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemoteLoader{})
	const loc = "mem:///tool-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return err
	}
	_, err = c.Compile(loc)
	return err
}

// noRemoteLoader refuses every URL, so validation never fetches over the
// network.
type noRemoteLoader struct{}

// Load refuses to load url.
func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references to %s are not allowed", url)
}

func validatePolicy(s map[string]any, add addFunc) {
	if rules, ok := s["rules"].([]any); ok {
		seen := map[string]int{}
		for i, r := range rules {
			rm, ok := r.(map[string]any)
			if !ok {
				continue
			}
			p := fmt.Sprintf("spec.rules[%d]", i)
			if n := str(rm, "name"); n != "" {
				if !IsDNS1123Label(n) {
					add(p+".name", ErrCodeInvalid, "rule name %q must be a DNS-1123 label", n)
				}
				if j, dup := seen[n]; dup {
					add(p+".name", ErrCodeDuplicate, "rule name %q is already used by spec.rules[%d]; rule names must be unique in a policy", n, j)
				} else {
					seen[n] = i
				}
			}
			if w, ok := rm["when"].(string); ok && strings.TrimSpace(w) == "" {
				add(p+".when", ErrCodeRequired, "a rule needs a CEL condition in when, e.g. \"true\"")
			}
			action := str(rm, "action")
			_, hasModify := rm["modify"]
			if action == ActionModify && !hasModify {
				add(p+".modify", ErrCodeRequired, "a rule with action modify needs modify.set or modify.remove")
			}
			if hasModify && action != "" && action != ActionModify {
				add(p+".modify", ErrCodeInvalid, "modify is used only with action modify (action is %s)", action)
			}
		}
	}
	if id, ok := s["idempotency"].(map[string]any); ok {
		checkDuration(id, "window", "spec.idempotency.window", add)
	}
	if ap, ok := s["approval"].(map[string]any); ok {
		checkDuration(ap, "timeout", "spec.approval.timeout", add)
	}
	if limits, ok := s["limits"].([]any); ok {
		for i, l := range limits {
			lm, ok := l.(map[string]any)
			if !ok {
				continue
			}
			p := fmt.Sprintf("spec.limits[%d]", i)
			checkDuration(lm, "window", p+".window", add)
			_, calls := lm["maxCalls"]
			_, cost := lm["maxCost"]
			_, tokens := lm["maxTokens"]
			if !calls && !cost && !tokens {
				add(p+".maxCalls", ErrCodeRequired, "a limit needs maxCalls, maxCost or maxTokens")
			}
		}
	}
	if guardians, ok := s["guardians"].([]any); ok {
		for i, g := range guardians {
			if gm, ok := g.(map[string]any); ok {
				checkDuration(gm, "timeout", fmt.Sprintf("spec.guardians[%d].timeout", i), add)
			}
		}
	}
	if sel, ok := s["selector"].(map[string]any); ok {
		for _, f := range []string{"namespaces", "environments", "agents"} {
			checkNameList(sel, f, "spec.selector."+f, add)
		}
	}
}

// checkDuration reports m[key] when it is a string that is not a positive
// Go duration.
func checkDuration(m map[string]any, key, path string, add addFunc) {
	v, ok := m[key].(string)
	if !ok {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		add(path, ErrCodeInvalid, "%q is not a duration: use a number with a unit, e.g. 30s, 10m or 24h", v)
		return
	}
	if d <= 0 {
		add(path, ErrCodeInvalid, "duration %q must be positive", v)
	}
}

// checkURL reports m[key] when it is a string that is not an absolute http
// or https URL.
func checkURL(m map[string]any, key, path string, add addFunc) {
	v, ok := m[key].(string)
	if !ok || v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add(path, ErrCodeInvalid, "%q must be an absolute http or https URL", v)
	}
}

// checkName reports m[key] when it is a non-empty string that is not a
// DNS-1123 label (a reference to another resource).
func checkName(m map[string]any, key, path string, add addFunc) {
	v, ok := m[key].(string)
	if !ok || v == "" {
		return
	}
	if !IsDNS1123Label(v) {
		add(path, ErrCodeInvalid, "%q is not a resource name: names are DNS-1123 labels", v)
	}
}

func checkNameList(m map[string]any, key, path string, add addFunc) {
	l, ok := m[key].([]any)
	if !ok {
		return
	}
	for i, e := range l {
		if v, ok := e.(string); ok && v != "" && !IsDNS1123Label(v) {
			add(fmt.Sprintf("%s[%d]", path, i), ErrCodeInvalid, "%q is not a resource name: names are DNS-1123 labels", v)
		}
	}
}

func str(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}

// asInt reads a whole number of any of the numeric types a spec may hold.
func asInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case int:
		return int64(t), true
	case float64:
		if t == float64(int64(t)) {
			return int64(t), true
		}
	case json.Number:
		i, err := t.Int64()
		return i, err == nil
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
