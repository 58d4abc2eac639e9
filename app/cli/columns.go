package cli

import (
	"strconv"
	"time"

	"github.com/warden-dev/warden/app/resource"
)

// column is one table column of get.
type column struct {
	header string
	value  func(o *resource.Object) string
}

func spec(path ...string) func(*resource.Object) string {
	return func(o *resource.Object) string { return orDash(text(lookup(o.Spec, path...))) }
}

func status(path ...string) func(*resource.Object) string {
	return func(o *resource.Object) string { return orDash(text(lookup(o.Status, path...))) }
}

func specLen(path ...string) func(*resource.Object) string {
	return func(o *resource.Object) string { return length(lookup(o.Spec, path...)) }
}

func approvalRequired(o *resource.Object) string {
	v, ok := lookup(o.Spec, "requiresApproval")
	if b, isBool := v.(bool); ok && isBool && b {
		return "required"
	}
	if ok {
		return "no"
	}
	return "-"
}

func generation(o *resource.Object) string {
	return strconv.FormatInt(o.Metadata.Generation, 10)
}

// kindColumns returns the columns between NAME and AGE for a kind, and the
// extra ones -o wide adds.
func kindColumns(kind string) (normal, wide []column) {
	switch kind {
	case resource.KindAgent:
		return []column{
				{"MODEL", spec("modelRoute", "primary")},
				{"TOOLS", specLen("tools")},
				{"MANIFEST", status("compiledManifest")},
			}, []column{
				{"FRAMEWORK", spec("framework", "adapter")},
				{"FALLBACK", spec("modelRoute", "fallback")},
				{"POLICIES", spec("policies")},
				{"GENERATION", generation},
			}
	case resource.KindTool:
		return []column{
				{"SIDE-EFFECT", spec("sideEffect")},
				{"SOURCE", spec("source")},
				{"APPROVAL", approvalRequired},
			}, []column{
				{"COST-PER-CALL", spec("costPerCall")},
				{"DESCRIPTION", spec("description")},
			}
	case resource.KindModel:
		return []column{
				{"PROVIDER", spec("provider")},
				{"MODEL", spec("model")},
			}, []column{
				{"CONTEXT-WINDOW", spec("capabilities", "contextWindow")},
				{"ENDPOINT", spec("endpoint")},
			}
	case resource.KindCompiledAgentManifest:
		return []column{
				{"AGENT", spec("agent", "name")},
				{"GENERATION", spec("agent", "generation")},
				{"MODEL", spec("modelRoute", "primary")},
				{"TOOLS", specLen("tools")},
			}, []column{
				{"ADAPTER-IMAGE", spec("framework", "adapterImage")},
				{"POLICIES", spec("policies", "resolved")},
			}
	case resource.KindMCPServer:
		return []column{
				{"VERSION", status("server", "version")},
				{"PIN", mcpPin},
				{"DRIFT", mcpDrift},
				{"QUARANTINE", mcpQuarantine},
				{"TOOLS", func(o *resource.Object) string { return length(lookup(o.Status, "tools")) }},
			}, []column{
				{"TRANSPORT", spec("transport")},
				{"URL", spec("url")},
				{"TRUST", spec("trustScore")},
				{"DISCOVERED", status("discoveredAt")},
			}
	case resource.KindPolicy:
		return []column{
				{"VERSION", spec("version")},
				{"RULES", specLen("rules")},
			}, []column{
				{"DESCRIPTION", spec("description")},
			}
	case resource.KindDeployment:
		return []column{
				{"AGENT", spec("agentRef", "name")},
				{"ENVIRONMENT", spec("environment")},
				{"REPLICAS", spec("replicas")},
			}, []column{
				{"RUNTIME", spec("runtime")},
			}
	case resource.KindEnvironment:
		return []column{
			{"TIER", spec("tier")},
			{"PROMOTES-TO", spec("promotesTo")},
		}, nil
	case resource.KindExecution:
		return []column{
				{"AGENT", spec("agentRef", "name")},
				{"PHASE", status("phase")},
			}, []column{
				{"MANIFEST", spec("manifest")},
				{"STARTED", status("startedAt")},
			}
	case resource.KindToolCall:
		return []column{
				{"AGENT", spec("agentRef", "name")},
				{"TOOL", spec("toolRef", "name")},
				{"PHASE", status("phase")},
			}, []column{
				{"SIDE-EFFECT", spec("sideEffects", "level")},
				{"APPROVAL", spec("approval", "status")},
			}
	case resource.KindApproval:
		return []column{
				{"TOOL", spec("toolRef", "name")},
				{"AGENT", spec("agentRef", "name")},
				{"STATUS", status("status")},
			}, []column{
				{"SIDE-EFFECT", spec("sideEffect")},
				{"EXPIRES", spec("expiresAt")},
				{"POLICY", spec("policy")},
				{"RULE", spec("rule")},
				{"CHANNEL", status("channel")},
			}
	case resource.KindNotificationChannel:
		return []column{{"TYPE", spec("type")}}, []column{{"MAX-ATTEMPTS", spec("maxAttempts")}}
	case resource.KindMemory:
		return []column{{"TYPE", spec("type")}}, []column{{"TTL", spec("ttl")}}
	case resource.KindRAGIndex:
		return []column{{"SOURCES", spec("sources")}}, []column{{"TOP-K", spec("topK")}}
	case resource.KindKnowledgeSource:
		return []column{{"TYPE", spec("type")}, {"PHASE", status("phase")}}, []column{{"LAST-SYNC", status("lastSyncAt")}}
	case resource.KindRoleBinding:
		return []column{{"ROLE", spec("role")}, {"SUBJECTS", specLen("subjects")}}, nil
	}
	return nil, nil
}

// tableColumns returns every column of a get table for a kind.
func tableColumns(kind string, wide, allNamespaces bool, now time.Time) []column {
	var cols []column
	if allNamespaces {
		cols = append(cols, column{"NAMESPACE", func(o *resource.Object) string { return o.Metadata.Namespace }})
	}
	cols = append(cols, column{"NAME", func(o *resource.Object) string { return o.Metadata.Name }})
	normal, extra := kindColumns(kind)
	cols = append(cols, normal...)
	cols = append(cols, column{"AGE", func(o *resource.Object) string { return age(o.Metadata.CreationTimestamp, now) }})
	if wide {
		cols = append(cols, extra...)
		cols = append(cols, column{"LABELS", func(o *resource.Object) string { return labelsText(o.Metadata.Labels) }})
	}
	return cols
}

func headerOf(cols []column) []string {
	h := make([]string, len(cols))
	for i, c := range cols {
		h[i] = c.header
	}
	return h
}

func rowOf(cols []column, o *resource.Object) []string {
	r := make([]string, len(cols))
	for i, c := range cols {
		r[i] = c.value(o)
	}
	return r
}
