// Package clientconfig reads and writes the warden CLI's configuration file,
// $WARDEN_HOME/config.yaml, which plays the role of a kubeconfig: a list of
// named contexts (server address, API token, default namespace) and the name
// of the current one.
//
// The package never reads the process environment or the user's home
// directory on its own: callers pass the home directory and an environment
// lookup function, so the CLI and its tests decide where the file lives.
// Resolve applies the precedence every command uses: command-line flags,
// then the WARDEN_SERVER, WARDEN_TOKEN and WARDEN_NAMESPACE environment
// variables, then the selected context of the file.
package clientconfig
