package clientconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// File layout and defaults.
const (
	// APIVersion is the apiVersion of the config file.
	APIVersion = "warden.dev/v1alpha1"
	// Kind is the kind of the config file.
	Kind = "Config"
	// FileName is the name of the config file inside the home directory.
	FileName = "config.yaml"
	// DefaultHomeDir is the home directory, relative to the user's home,
	// used when WARDEN_HOME is not set.
	DefaultHomeDir = ".warden"
	// DefaultServer is the control plane address used when neither a flag,
	// the environment nor the file names one: the local-mode server.
	DefaultServer = "http://127.0.0.1:8080"
	// DefaultNamespace is the namespace used when nothing names one.
	DefaultNamespace = "default"
	// LocalContext is the name of the context written by `warden up`.
	LocalContext = "local"
)

// Environment variables read by Home and Resolve.
const (
	EnvHome      = "WARDEN_HOME"
	EnvServer    = "WARDEN_SERVER"
	EnvToken     = "WARDEN_TOKEN"
	EnvNamespace = "WARDEN_NAMESPACE"
	EnvContext   = "WARDEN_CONTEXT"
)

// Config is the content of config.yaml.
type Config struct {
	APIVersion     string    `json:"apiVersion"`
	Kind           string    `json:"kind"`
	CurrentContext string    `json:"currentContext,omitempty"`
	Contexts       []Context `json:"contexts"`
}

// Context is one named connection to a control plane.
type Context struct {
	// Name identifies the context inside the file.
	Name string `json:"name"`
	// Server is the control plane's base URL, e.g. http://127.0.0.1:8080.
	Server string `json:"server"`
	// Token is the bearer credential (an API key or an OIDC token).
	Token string `json:"token,omitempty"`
	// Namespace is the default namespace of commands run in this context.
	Namespace string `json:"namespace,omitempty"`
}

// New returns an empty configuration with apiVersion and kind set.
func New() *Config {
	return &Config{APIVersion: APIVersion, Kind: Kind, Contexts: []Context{}}
}

// Home returns the Warden home directory: $WARDEN_HOME when set, otherwise
// ~/.warden where ~ is $HOME. lookupEnv is usually os.LookupEnv.
func Home(lookupEnv func(string) (string, bool)) (string, error) {
	if h, ok := lookupEnv(EnvHome); ok && h != "" {
		return h, nil
	}
	if h, ok := lookupEnv("HOME"); ok && h != "" {
		return filepath.Join(h, DefaultHomeDir), nil
	}
	return "", fmt.Errorf("cannot locate the Warden home directory: set %s or HOME", EnvHome)
}

// Path returns the config file path inside home.
func Path(home string) string { return filepath.Join(home, FileName) }

// Load reads home/config.yaml. A missing file is not an error: Load returns
// an empty configuration, so first runs work before `warden up` wrote one.
func Load(home string) (*Config, error) {
	p := Path(home)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	cfg := New()
	if err := yaml.UnmarshalStrict(b, cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return cfg, nil
}

// Save writes cfg to home/config.yaml with mode 0600, creating home with
// mode 0700 when it does not exist. The file is replaced atomically.
func Save(home string, cfg *Config) error {
	if cfg.APIVersion == "" {
		cfg.APIVersion = APIVersion
	}
	if cfg.Kind == "" {
		cfg.Kind = Kind
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	tmp, err := os.CreateTemp(home, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("create temporary config file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), Path(home)); err != nil {
		return fmt.Errorf("replace %s: %w", Path(home), err)
	}
	return nil
}

// Validate checks the apiVersion, the kind and that context names are set
// and unique.
func (c *Config) Validate() error {
	if c.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion: must be %q, got %q", APIVersion, c.APIVersion)
	}
	if c.Kind != Kind {
		return fmt.Errorf("kind: must be %q, got %q", Kind, c.Kind)
	}
	seen := make(map[string]bool, len(c.Contexts))
	for i, x := range c.Contexts {
		if strings.TrimSpace(x.Name) == "" {
			return fmt.Errorf("contexts[%d].name: required", i)
		}
		if seen[x.Name] {
			return fmt.Errorf("contexts[%d].name: duplicate context %q", i, x.Name)
		}
		seen[x.Name] = true
	}
	return nil
}

// Context returns the context called name.
func (c *Config) Context(name string) (Context, bool) {
	for _, x := range c.Contexts {
		if x.Name == name {
			return x, true
		}
	}
	return Context{}, false
}

// Current returns the current context, if one is set and exists.
func (c *Config) Current() (Context, bool) {
	if c.CurrentContext == "" {
		return Context{}, false
	}
	return c.Context(c.CurrentContext)
}

// SetContext adds x, or replaces the context of the same name.
func (c *Config) SetContext(x Context) {
	for i := range c.Contexts {
		if c.Contexts[i].Name == x.Name {
			c.Contexts[i] = x
			return
		}
	}
	c.Contexts = append(c.Contexts, x)
}

// UseContext makes the context called name the current one.
func (c *Config) UseContext(name string) error {
	if _, ok := c.Context(name); !ok {
		return fmt.Errorf("context %q: %w", name, ErrNoContext)
	}
	c.CurrentContext = name
	return nil
}
