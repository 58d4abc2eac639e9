package clientconfig

import "fmt"

// Overrides are the values given on the command line; empty means unset.
type Overrides struct {
	Server    string
	Token     string
	Namespace string
	// Context selects a context other than the file's current one.
	Context string
}

// Resolved is the connection a command uses after precedence is applied.
type Resolved struct {
	Server    string
	Token     string
	Namespace string
	// Context is the name of the file context that contributed values, or
	// empty when none did.
	Context string
}

// Resolve applies the precedence flags > environment > config file >
// defaults, field by field: --server beats WARDEN_SERVER beats the
// context's server beats DefaultServer, and likewise for the token and
// the namespace. The context is chosen by --context, then WARDEN_CONTEXT,
// then the file's currentContext. Naming a context that does not exist is
// an error; having no context at all is not.
func Resolve(cfg *Config, flags Overrides, lookupEnv func(string) (string, bool)) (Resolved, error) {
	env := func(k string) string {
		v, _ := lookupEnv(k)
		return v
	}
	var ctx Context
	name := first(flags.Context, env(EnvContext))
	if name != "" {
		c, ok := cfg.Context(name)
		if !ok {
			return Resolved{}, fmt.Errorf("context %q: %w", name, ErrNoContext)
		}
		ctx = c
	} else if c, ok := cfg.Current(); ok {
		ctx = c
	}
	return Resolved{
		Server:    first(flags.Server, env(EnvServer), ctx.Server, DefaultServer),
		Token:     first(flags.Token, env(EnvToken), ctx.Token),
		Namespace: first(flags.Namespace, env(EnvNamespace), ctx.Namespace, DefaultNamespace),
		Context:   ctx.Name,
	}, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
