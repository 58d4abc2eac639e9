package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitMain runs the init stub inside the sandbox and returns the process's
// exit code; call it only when IsInit(args) is true. It reads its
// configuration from the Runner, applies Landlock, seccomp and the rlimits,
// and executes the command in its place.
//
// When the command may reach hosts, the stub instead stays alive as the
// command's parent: it listens on 127.0.0.1 inside the sandbox, forwards
// each connection to the host-side egress proxy's unix socket, points the
// HTTP(S)_PROXY variables at that listener, and starts its second stage
// (the same binary with another marker) to restrict itself and execute the
// command. The stub itself stays outside the command's Landlock domain, so
// (with Landlock ABI 6+) the command cannot signal it.
func InitMain(args []string) int {
	status := os.NewFile(fdStatus, "sandbox-status")
	secondStage := len(args) > 1 && args[1] == execArg
	if !secondStage {
		if _, err := io.WriteString(status, statusStarted+"\n"); err != nil {
			fmt.Fprintf(os.Stderr, "warden sandbox init: %v (the stub runs only under sandbox.Runner)\n", err)
			return exitStubFailed
		}
	}
	cfg, err := readStubConfig()
	if err != nil {
		return stubFail(status, exitStubFailed, "%v", err)
	}
	if secondStage || cfg.EgressSocket == "" {
		return restrictAndExec(cfg, status)
	}
	return superviseWithEgress(cfg, status)
}

// readStubConfig reads the configuration the Runner (or the first stage)
// writes to fdConfig.
func readStubConfig() (*stubConfig, error) {
	f := os.NewFile(fdConfig, "sandbox-config")
	defer f.Close()
	var cfg stubConfig
	if err := json.NewDecoder(f).Decode(&cfg); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(cfg.Argv) == 0 && !cfg.Probe {
		return nil, errors.New("read config: no command")
	}
	return &cfg, nil
}

// stubFail reports a setup failure to the Runner and returns code.
func stubFail(status *os.File, code int, format string, args ...any) int {
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	_, _ = io.WriteString(status, statusError+msg+"\n")
	return code
}

// restrictAndExec applies every in-sandbox restriction to this process and
// executes the command in its place; it returns only on failure (or in probe
// mode). The goroutine stays locked to its OS thread, since Landlock binds
// the thread that asks and execve keeps that thread's restrictions.
func restrictAndExec(cfg *stubConfig, status *os.File) int {
	runtime.LockOSThread()

	path := ""
	if !cfg.Probe {
		var err error
		if path, err = lookPath(cfg.Argv[0], cfg.Env); err != nil {
			return stubFail(status, exitNotFound, "%v", err)
		}
	}
	// The status pipe must not leak into the command; closing it on exec is
	// also how the Runner learns that the command started.
	unix.CloseOnExec(int(status.Fd()))

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return stubFail(status, exitStubFailed, "set no_new_privs: %v", err)
	}
	if err := applyLandlock(cfg.Paths); err != nil {
		return stubFail(status, exitStubFailed, "%v", err)
	}
	if err := applySeccomp(); err != nil {
		return stubFail(status, exitStubFailed, "%v", err)
	}
	if err := applyRlimits(cfg); err != nil {
		return stubFail(status, exitStubFailed, "%v", err)
	}
	if cfg.Probe {
		// The stub's own binary is in the sandbox but in no rule: Landlock
		// must refuse to open it.
		if f, err := os.Open(stubPath); err == nil {
			f.Close()
			return stubFail(status, exitStubFailed, "landlock is not enforced: %s is readable", stubPath)
		}
		return 0
	}
	err := syscall.Exec(path, cfg.Argv, cfg.Env)
	code := 126
	if errors.Is(err, unix.ENOENT) {
		code = exitNotFound
	}
	return stubFail(status, code, "exec %s: %v", cfg.Argv[0], err)
}

// applyRlimits sets the command's CPU and address-space limits and turns off
// core dumps (which could write the command's memory into the scratch dir).
func applyRlimits(cfg *stubConfig) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("setrlimit core: %w", err)
	}
	if cfg.CPUSeconds > 0 {
		// SIGXCPU at the soft limit, SIGKILL a second later for commands
		// that catch it.
		lim := unix.Rlimit{Cur: uint64(cfg.CPUSeconds), Max: uint64(cfg.CPUSeconds) + 1}
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &lim); err != nil {
			return fmt.Errorf("setrlimit cpu: %w", err)
		}
	}
	if cfg.MemoryBytes > 0 {
		lim := unix.Rlimit{Cur: uint64(cfg.MemoryBytes), Max: uint64(cfg.MemoryBytes)}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
			return fmt.Errorf("setrlimit as: %w", err)
		}
	}
	return nil
}

// lookPath resolves name like a shell would, with the PATH of the command's
// environment (not the stub's, which is empty).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar := defaultPATH
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %s", name, pathVar)
}

// superviseWithEgress runs the forwarder for the command's proxy traffic and
// the second stage that restricts itself and executes the command; it
// returns the command's exit code once the command has exited.
func superviseWithEgress(cfg *stubConfig, status *os.File) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return stubFail(status, exitStubFailed, "egress listener: %v", err)
	}
	proxyURL := "http://" + ln.Addr().String()
	cfg.Env = withProxyEnv(cfg.Env, proxyURL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go forwardEgress(ctx, ln, cfg.EgressSocket)

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return stubFail(status, exitStubFailed, "config pipe: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return stubFail(status, exitStubFailed, "find own executable: %v", err)
	}
	cmd := exec.Command(self, execArg)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{cfgR, status} // fdConfig, fdStatus
	if err := cmd.Start(); err != nil {
		return stubFail(status, exitStubFailed, "start second stage: %v", err)
	}
	cfgR.Close()
	status.Close()
	err = json.NewEncoder(cfgW).Encode(cfg)
	cfgW.Close()
	if err != nil {
		// The second stage reports its own failure to read the config.
		_ = cmd.Process.Kill()
	}
	_ = cmd.Wait()
	return exitCode(cmd.ProcessState)
}

// withProxyEnv points the usual proxy variables (both spellings: curl reads
// only the lower-case http_proxy) at the in-sandbox forwarder.
func withProxyEnv(env []string, proxyURL string) []string {
	names := []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}
	out := make([]string, 0, len(env)+len(names))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	for _, n := range names {
		out = append(out, n+"="+proxyURL)
	}
	return out
}

// forwardEgress copies every connection accepted on ln to a new connection
// to the egress proxy's unix socket, until ctx ends.
func forwardEgress(ctx context.Context, ln net.Listener, socket string) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var d net.Dialer
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			u, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				c.Close()
				return
			}
			splice(ctx, c, c, u)
		}()
	}
}

// exitCode maps a process state to a shell-style exit code: the status, or
// 128+N for signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitStubFailed
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
