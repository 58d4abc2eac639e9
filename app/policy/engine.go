package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/warden-dev/warden/app/jcs"
	"github.com/warden-dev/warden/app/resource"
)

// maxCached bounds the compiled policies an engine keeps.
const maxCached = 10000

// Engine compiles Policy resources into CEL programs once per version and
// builds evaluable Sets from them. It is safe for concurrent use.
type Engine struct {
	env *cel.Env

	mu    sync.Mutex
	cache map[string]*compiledPolicy // by uid, or namespace/name

	compiles atomic.Int64
}

// NewEngine returns an Engine with its own CEL environment. The
// environment is fixed by this package, so building it fails only when the
// package itself is broken; NewEngine then panics, as regexp.MustCompile
// does for a constant pattern.
func NewEngine() *Engine {
	env, err := newEnv()
	if err != nil {
		panic(err)
	}
	return &Engine{env: env, cache: map[string]*compiledPolicy{}}
}

// Compilations returns how many policies the engine has compiled since it
// was built; tests use it to prove that unchanged policies are reused.
func (e *Engine) Compilations() int64 { return e.compiles.Load() }

// CheckPolicy compiles every CEL expression of a Policy and returns the
// problems as field errors (spec.rules[i].when, spec.rules[i].hooks[j],
// spec.rules[i].modify.set.<path>); nil when the policy is sound.
// Admission calls it so an apply reports a broken rule at its path. It
// builds a throwaway CEL environment; long-lived callers should prefer
// Engine.Check, which caches.
func CheckPolicy(o *resource.Object) resource.FieldErrors {
	return NewEngine().Check(o)
}

// Check is CheckPolicy through the engine's cache.
func (e *Engine) Check(o *resource.Object) resource.FieldErrors {
	return e.load(o).errs
}

// Version returns the version a policy is shown with: spec.version when
// set, else metadata.generation in decimal.
func Version(o *resource.Object) string {
	if v, ok := o.Spec["version"].(string); ok && v != "" {
		return v
	}
	return strconv.FormatInt(o.Metadata.Generation, 10)
}

// Ref renders a policy reference as "<policy>@<version>".
func Ref(name, version string) string { return name + "@" + version }

// LoadError reports the field errors of one policy that did not compile.
type LoadError struct {
	// Namespace and Name identify the policy.
	Namespace, Name string
	// Errors are the policy's problems.
	Errors resource.FieldErrors
}

// Build returns a Set of the given Policy objects, compiling only those
// whose namespace/name is new or whose resourceVersion or spec changed
// since the engine last saw them. A policy that does not compile stays in
// the set with its broken rules evaluating as deny (fail closed), and is
// reported in the returned LoadErrors.
func (e *Engine) Build(policies []*resource.Object) (*Set, []LoadError) {
	s := &Set{policies: make([]*compiledPolicy, 0, len(policies))}
	var errs []LoadError
	for _, o := range policies {
		if o == nil || o.Kind != resource.KindPolicy {
			continue
		}
		cp := e.load(o)
		s.policies = append(s.policies, cp)
		if len(cp.errs) > 0 {
			errs = append(errs, LoadError{Namespace: cp.namespace, Name: cp.name, Errors: cp.errs})
		}
	}
	slices.SortFunc(s.policies, func(a, b *compiledPolicy) int {
		if a.name != b.name {
			return cmpString(a.name, b.name)
		}
		return cmpString(a.namespace, b.namespace)
	})
	s.policies = slices.CompactFunc(s.policies, func(a, b *compiledPolicy) bool { return a.key == b.key })
	return s, errs
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// load returns the compiled form of o from the cache or compiles it.
//
// The cache is keyed by namespace/name and validated by resourceVersion
// and a hash of the spec: a rolled-back apply transaction may hand out the
// same resourceVersion again for different content on some backends, and
// objects that were never stored have no resourceVersion at all.
func (e *Engine) load(o *resource.Object) *compiledPolicy {
	// The uid tells apart policies of different tenants sharing one
	// engine; objects that were never stored have none.
	key := o.Metadata.UID
	if key == "" {
		key = o.Metadata.Namespace + "/" + o.Metadata.Name
	}
	fp, err := jcs.SHA256(o.Spec)
	if err != nil {
		fp = "unhashable:" + err.Error()
	}
	stamp := o.Metadata.ResourceVersion + "|" + strconv.FormatInt(o.Metadata.Generation, 10) + "|" + fp
	e.mu.Lock()
	cp, ok := e.cache[key]
	e.mu.Unlock()
	if ok && cp.stamp == stamp {
		return cp
	}
	cp = e.compile(o)
	cp.key, cp.stamp = key, stamp
	e.compiles.Add(1)
	e.mu.Lock()
	if len(e.cache) >= maxCached {
		// Deleted policies are never announced to the engine; starting
		// over now and then bounds the memory they hold.
		clear(e.cache)
	}
	e.cache[key] = cp
	e.mu.Unlock()
	return cp
}

// compile turns one Policy object into programs, collecting every problem.
func (e *Engine) compile(o *resource.Object) *compiledPolicy {
	cp := &compiledPolicy{
		name:      o.Metadata.Name,
		namespace: o.Metadata.Namespace,
		version:   Version(o),
	}
	spec, err := resource.DecodeSpec[resource.PolicySpec](o)
	if err != nil {
		cp.errs = append(cp.errs, resource.FieldError{Path: "spec", Code: resource.ErrCodeInvalid, Message: err.Error()})
		cp.rules = []*compiledRule{{name: "spec", action: resource.ActionDeny, hooks: allHooks,
			broken: "the policy spec does not decode: " + err.Error()}}
		return cp
	}
	if spec.Selector != nil {
		cp.selector = *spec.Selector
	}
	cp.settings = parseSettings(&spec)
	for i, r := range spec.Rules {
		cr := &compiledRule{name: r.Name, action: r.Action, message: r.Message}
		if cr.name == "" {
			cr.name = "rules[" + strconv.Itoa(i) + "]"
		}
		hooks := r.Hooks
		if len(hooks) == 0 {
			hooks = []string{resource.HookToolCallRequest}
		}
		for j, h := range hooks {
			bit := hookBit(h)
			if bit == 0 {
				cp.errs = append(cp.errs, resource.FieldError{
					Path: fmt.Sprintf("spec.rules[%d].hooks[%d]", i, j), Code: resource.ErrCodeNotSupported,
					Message: fmt.Sprintf("unknown hook %q; expected one of preflight, toolCallRequest, toolCallResult, modelCall, step", h),
				})
				continue
			}
			cr.hooks |= bit
		}
		if severity(cr.action) == 0 {
			cp.errs = append(cp.errs, resource.FieldError{
				Path: fmt.Sprintf("spec.rules[%d].action", i), Code: resource.ErrCodeNotSupported,
				Message: fmt.Sprintf("unknown action %q; expected one of allow, deny, modify, require_approval", r.Action),
			})
			// An unknown action must not silently allow.
			cr.action = resource.ActionDeny
		}
		path := fmt.Sprintf("spec.rules[%d].when", i)
		prg, used, ast, msg := e.program(r.When, hooks, true)
		if msg != "" {
			cp.errs = append(cp.errs, resource.FieldError{Path: path, Code: resource.ErrCodeInvalid, Message: msg})
			cr.broken = "the when expression does not compile: " + msg
		}
		cr.prg, cr.vars = prg, used
		if prg != nil {
			cr.tool = toolGuard(ast)
		}
		if r.Modify != nil {
			keys := make([]string, 0, len(r.Modify.Set))
			for k := range r.Modify.Set {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				prg, _, _, msg := e.program(r.Modify.Set[k], hooks, false)
				if msg != "" {
					cp.errs = append(cp.errs, resource.FieldError{
						Path: fmt.Sprintf("spec.rules[%d].modify.set[%s]", i, strconv.Quote(k)), Code: resource.ErrCodeInvalid, Message: msg,
					})
				}
				cr.set = append(cr.set, setOp{path: k, prg: prg, broken: msg})
			}
			cr.remove = slices.Clone(r.Modify.Remove)
		}
		cp.rules = append(cp.rules, cr)
	}
	return cp
}

// toolGuard returns the tool a when expression is about: "x" when the
// expression is tool.name == "x" (either way round) or a conjunction with
// such a term, "" otherwise. Such a rule never fires for another tool:
// CEL's && is false as soon as one term is, whatever the others evaluate
// to (an error included), and tool.name is always the called tool's name.
// So the rule is not evaluated for other tools (Set.eval), which is most of
// the cost of policies that scope their rules by tool.
func toolGuard(ast *cel.Ast) string {
	var guard func(x celast.Expr) string
	guard = func(x celast.Expr) string {
		if x.Kind() != celast.CallKind {
			return ""
		}
		c := x.AsCall()
		if c.IsMemberFunction() {
			return ""
		}
		args := c.Args()
		switch c.FunctionName() {
		case operators.LogicalAnd:
			for _, a := range args {
				if name := guard(a); name != "" {
					return name
				}
			}
		case operators.Equals:
			if len(args) == 2 {
				if name := toolNameIs(args[0], args[1]); name != "" {
					return name
				}
				return toolNameIs(args[1], args[0])
			}
		}
		return ""
	}
	return guard(ast.NativeRep().Expr())
}

// toolNameIs returns the string literal lit when sel is tool.name.
func toolNameIs(sel, lit celast.Expr) string {
	if sel.Kind() != celast.SelectKind || lit.Kind() != celast.LiteralKind {
		return ""
	}
	s := sel.AsSelect()
	if s.IsTestOnly() || s.FieldName() != "name" || s.Operand().Kind() != celast.IdentKind || s.Operand().AsIdent() != VarTool {
		return ""
	}
	v, _ := lit.AsLiteral().(types.String)
	return string(v)
}

// program compiles an expression for the given hooks and returns it with
// its checked syntax tree. It returns a problem message instead of a
// program when the expression does not parse or type-check, names a
// variable the hooks do not fill, or (wantBool) is not of type bool.
func (e *Engine) program(expr string, hooks []string, wantBool bool) (cel.Program, []string, *cel.Ast, string) {
	if expr == "" {
		return nil, nil, nil, "expression is empty"
	}
	ast, iss := e.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		msg := iss.Err().Error()
		if strings.Contains(msg, "reserved identifier: namespace") {
			msg = "`namespace` is a reserved word in CEL; the agent's namespace is the variable `ns`: " + msg
		}
		return nil, nil, nil, msg
	}
	used, problem := checkVars(ast, hooks)
	if problem != "" {
		return nil, used, nil, problem
	}
	if wantBool && !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, used, nil, fmt.Sprintf("expression has type %s but must evaluate to bool", ast.OutputType())
	}
	prg, err := e.env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, used, nil, err.Error()
	}
	return prg, used, ast, ""
}
