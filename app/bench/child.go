package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// A child is a copy of this program, re-executed with a hidden command,
// that serves what a benchmark measures on CPUs of its own while the load
// generator runs in the parent on the others. They speak one line at a
// time: the child's first line on its standard output is its hello (a
// JSON value: the addresses it serves, a token); after that the parent
// writes a command line to the child's standard input and reads one
// answer line. Closing the child's input ends it.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

// startChild runs this program with args, its standard error the
// parent's, and decodes its hello into hello.
func startChild(ctx context.Context, args []string, hello any) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to run the child: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("child's input: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("child's output: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the child: %w", err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := c.out.ReadString('\n')
	if err != nil {
		_ = c.close()
		return nil, fmt.Errorf("the child ended before it was ready: %w", err)
	}
	if err := json.Unmarshal([]byte(line), hello); err != nil {
		_ = c.close()
		return nil, fmt.Errorf("the child's hello %q: %w", strings.TrimSpace(line), err)
	}
	return c, nil
}

// ask sends one command and returns the child's answer; an answer that
// starts with "error: " is returned as an error.
func (c *child) ask(command string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.in, command+"\n"); err != nil {
		return "", fmt.Errorf("send %q to the child: %w", command, err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("the child's answer to %q: %w", command, err)
	}
	line = strings.TrimSuffix(line, "\n")
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return "", errors.New(msg)
	}
	return line, nil
}

// close ends the child's input and waits for it to exit.
func (c *child) close() error {
	_ = c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("the child: %w", err)
	}
	return nil
}

// serveChild is the child's side: it writes hello as one JSON line, then
// answers each command line with handle's answer (or "error: …") until
// its input ends or ctx is done.
func serveChild(ctx context.Context, in io.Reader, out io.Writer, hello any, handle func(ctx context.Context, command string) (string, error)) error {
	b, err := json.Marshal(hello)
	if err != nil {
		return fmt.Errorf("child hello: %w", err)
	}
	if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
		return fmt.Errorf("write the child's hello: %w", err)
	}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if ctx.Err() != nil {
			return nil
		}
		answer, err := handle(ctx, lines.Text())
		if err != nil {
			answer = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		if _, err := fmt.Fprintf(out, "%s\n", answer); err != nil {
			return fmt.Errorf("answer the parent: %w", err)
		}
	}
	return nil
}
