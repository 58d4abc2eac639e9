package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/warden-dev/warden/app/resource"
)

// CEL variable names. Preflight rules see the variables of
// docs/resources.md; the runtime hooks see the call they judge.
const (
	VarHook   = "hook"
	VarKind   = "kind"
	VarObject = "object"
	// VarNamespace is the namespace of the agent. docs/resources.md calls
	// it `namespace`, but that word is reserved in CEL and cannot be used
	// as an identifier, so rules spell it `ns` (as Kubernetes admission
	// policies spell it namespaceObject); CheckPolicy says so when a rule
	// tries `namespace`.
	VarNamespace   = "ns"
	VarEnvironment = "environment"
	VarAgent       = "agent"
	VarModels      = "models"
	VarTools       = "tools"
	VarTool        = "tool"
	VarInput       = "input"
	VarOutput      = "output"
	VarModel       = "model"
	// VarNow is the time of the evaluation, a CEL timestamp, so that rules
	// can say "not outside office hours" (now.getHours("Europe/Paris")).
	VarNow = "now"
)

// hookVars lists the variables a rule may reference at each hook. A rule
// that names a variable its hook never fills is rejected when the policy
// is checked, instead of failing (closed) at every evaluation.
func hookVars(hook string) []string {
	switch hook {
	case resource.HookPreflight:
		return []string{VarHook, VarKind, VarObject, VarNamespace, VarEnvironment, VarAgent, VarModels, VarTools}
	case resource.HookToolCallRequest:
		return []string{VarHook, VarNamespace, VarEnvironment, VarAgent, VarTool, VarInput, VarNow}
	case resource.HookToolCallResult:
		return []string{VarHook, VarNamespace, VarEnvironment, VarAgent, VarTool, VarInput, VarOutput, VarNow}
	case resource.HookModelCall:
		return []string{VarHook, VarNamespace, VarEnvironment, VarAgent, VarModel, VarInput, VarNow}
	case resource.HookStep:
		return []string{VarHook, VarNamespace, VarEnvironment, VarAgent, VarInput, VarNow}
	}
	return nil
}

// Hooks returns every hook a rule can name, in a stable order.
func Hooks() []string {
	return []string{resource.HookPreflight, resource.HookToolCallRequest, resource.HookToolCallResult, resource.HookModelCall, resource.HookStep}
}

// Bounds on a rule's expression.
const (
	maxExpressionSize       = 4096
	maxComprehensionNesting = 2
)

func newEnv() (*cel.Env, error) {
	env, err := cel.NewEnv(
		cel.Variable(VarHook, cel.StringType),
		cel.Variable(VarKind, cel.StringType),
		cel.Variable(VarObject, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(VarNamespace, cel.StringType),
		cel.Variable(VarEnvironment, cel.StringType),
		cel.Variable(VarAgent, cel.StringType),
		cel.Variable(VarModels, cel.ListType(cel.StringType)),
		cel.Variable(VarTools, cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable(VarTool, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(VarInput, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(VarOutput, cel.DynType),
		cel.Variable(VarModel, cel.StringType),
		cel.Variable(VarNow, cel.TimestampType),
		// JSON numbers arrive as doubles; let `input.amount > 100` compare
		// a double with an int literal as a person expects.
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		// Rules run on every tool call, so their cost is bounded when the
		// policy is admitted rather than tracked per evaluation (runtime
		// cost tracking tripled the cost of a decision): short
		// expressions, and at most two nested comprehensions, keep a
		// rule polynomial of low degree in the size of its input, which
		// the gateway's request limits bound.
		cel.ParserExpressionSizeLimit(maxExpressionSize),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(maxComprehensionNesting)),
	)
	if err != nil {
		return nil, fmt.Errorf("policy: build CEL environment: %w", err)
	}
	return env, nil
}

// checkVars reports the variables of ast that are not available at every
// hook of the rule, as one message, or "" when all are.
func checkVars(ast *cel.Ast, hooks []string) (used []string, problem string) {
	seen := map[string]bool{}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		// Comprehension variables and accumulators also appear as
		// references; only the declared variables matter here.
		if ref.Name != "" && len(ref.OverloadIDs) == 0 && ref.Value == nil && isVariable(ref.Name) {
			seen[ref.Name] = true
		}
	}
	for v := range seen {
		used = append(used, v)
	}
	slices.Sort(used)
	for _, h := range hooks {
		for _, v := range used {
			if !slices.Contains(hookVars(h), v) {
				return used, fmt.Sprintf("variable %q is not available at hook %s (available: %s)",
					v, h, strings.Join(hookVars(h), ", "))
			}
		}
	}
	return used, ""
}

func isVariable(name string) bool { return varIndex(name) >= 0 }

// ToolRef is a tool as rules see it: {name, sideEffect}.
type ToolRef struct {
	// Name is the tool's name, "<system>.<action>".
	Name string
	// SideEffect is the tool's side-effect class.
	SideEffect string
}

// Input holds the variables of one evaluation. Fill the fields of the hook
// being evaluated; the others stay empty.
type Input struct {
	// Hook is the hook evaluated: preflight, toolCallRequest,
	// toolCallResult or modelCall.
	Hook string
	// Namespace is the namespace of the agent.
	Namespace string
	// Environment is the target (preflight) or current environment.
	Environment string
	// Agent is the agent's name.
	Agent string
	// Bound are the names of policies in Namespace that the agent binds
	// explicitly (its spec.policies); they apply to it whatever their
	// selector says about namespaces and agents, but only in the
	// environments the selector names.
	Bound []string

	// Kind is the kind of the applied resource (preflight).
	Kind string
	// Object is the applied resource as a generic JSON object (preflight).
	Object map[string]any
	// Models are the route ids "<provider>:<model>" of the agent's route,
	// primary first (preflight).
	Models []string
	// Tools are the agent's tools (preflight).
	Tools []ToolRef

	// Tool is the tool called (toolCallRequest, toolCallResult).
	Tool ToolRef
	// Args are the tool's arguments or the model request, seen as `input`.
	Args map[string]any
	// Output is the tool's result (toolCallResult).
	Output any
	// Model is the route id of the model called (modelCall).
	Model string
	// Now is the time of the evaluation (runtime hooks); zero means the
	// time the variable is first read.
	Now time.Time
}

// activation resolves variables lazily and converts each to a CEL value
// at most once per evaluation of a Set, so a rule that never looks at the
// tools does not pay for converting them, and twenty rules reading `tool`
// share one conversion.
type activation struct {
	in   *Input
	vals [numVars]ref.Val
}

var _ interpreter.Activation = (*activation)(nil)

// ResolveName returns the CEL value of a declared variable.
func (a *activation) ResolveName(name string) (any, bool) {
	i := varIndex(name)
	if i < 0 {
		return nil, false
	}
	if v := a.vals[i]; v != nil {
		return v, true
	}
	var v ref.Val
	switch n := a.native(name).(type) {
	case map[string]any:
		v = refMap(n)
	default:
		v = types.DefaultTypeAdapter.NativeToValue(n)
	}
	a.vals[i] = v
	return v, true
}

// refMap converts the top level of a JSON object to CEL values once, so
// that twenty rules reading input.amount do not each convert it again;
// nested values stay lazily wrapped.
func refMap(m map[string]any) ref.Val {
	out := make(map[ref.Val]ref.Val, len(m))
	for k, v := range m {
		out[types.String(k)] = types.DefaultTypeAdapter.NativeToValue(v)
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

// numVars is the number of declared variables.
const numVars = 13

func varIndex(name string) int {
	switch name {
	case VarHook:
		return 0
	case VarKind:
		return 1
	case VarObject:
		return 2
	case VarNamespace:
		return 3
	case VarEnvironment:
		return 4
	case VarAgent:
		return 5
	case VarModels:
		return 6
	case VarTools:
		return 7
	case VarTool:
		return 8
	case VarInput:
		return 9
	case VarOutput:
		return 10
	case VarModel:
		return 11
	case VarNow:
		return 12
	}
	return -1
}

func (a *activation) native(name string) any {
	in := a.in
	switch name {
	case VarHook:
		return in.Hook
	case VarKind:
		return in.Kind
	case VarObject:
		if in.Object == nil {
			return map[string]any{}
		}
		return in.Object
	case VarNamespace:
		return in.Namespace
	case VarEnvironment:
		return in.Environment
	case VarAgent:
		return in.Agent
	case VarModels:
		if in.Models == nil {
			return []string{}
		}
		return in.Models
	case VarTools:
		tools := make([]any, len(in.Tools))
		for i, t := range in.Tools {
			tools[i] = map[string]any{"name": t.Name, "sideEffect": t.SideEffect}
		}
		return tools
	case VarTool:
		return map[string]any{"name": in.Tool.Name, "sideEffect": in.Tool.SideEffect}
	case VarInput:
		if in.Args == nil {
			return map[string]any{}
		}
		return in.Args
	case VarOutput:
		return in.Output
	case VarModel:
		return in.Model
	case VarNow:
		if in.Now.IsZero() {
			return time.Now().UTC()
		}
		return in.Now.UTC()
	}
	return nil
}

// Parent returns nil: the input is the only scope.
func (a *activation) Parent() interpreter.Activation { return nil }
