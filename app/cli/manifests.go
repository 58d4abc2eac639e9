package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/client"
)

// origin says where one document of a request body came from.
type origin struct {
	file  string
	index int // one-based position of the document inside file
}

func (o origin) String() string {
	if o.index > 1 {
		return fmt.Sprintf("%s #%d", o.file, o.index)
	}
	return o.file
}

// bundle is a request body assembled from -f arguments, with the origin of
// each of its documents so that diagnostics can name files.
type bundle struct {
	body    []byte
	origins []origin
}

// manifestExts are the file extensions a directory contributes.
var manifestExts = []string{".yaml", ".yml", ".json"}

// readManifests reads every -f argument: a file, a directory (its .yaml,
// .yml and .json files in lexical order, not recursing) or "-" for stdin.
// All documents become one multi-document body, so the server applies them
// all or none.
func readManifests(stdin io.Reader, paths []string) (*bundle, error) {
	if len(paths) == 0 {
		return nil, usagef("no manifests given: use -f FILE, -f DIR or -f -")
	}
	b := &bundle{}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("read stdin: %w", err)
			}
			b.add("<stdin>", data)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}
		files := []string{p}
		if info.IsDir() {
			if files, err = manifestFiles(p); err != nil {
				return nil, err
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("directory %s holds no .yaml, .yml or .json files", p)
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read manifests: %w", err)
			}
			b.add(f, data)
		}
	}
	if len(b.origins) == 0 {
		return nil, errors.New("the manifests hold no documents")
	}
	return b, nil
}

func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	var out []string
	for _, e := range entries { // os.ReadDir sorts by name
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// add appends the documents of one file. Documents that hold only
// whitespace and comments are dropped, so the server's document indexes
// match b.origins.
func (b *bundle) add(file string, data []byte) {
	for i, doc := range splitDocuments(data) {
		if len(b.body) > 0 {
			b.body = append(b.body, "---\n"...)
		}
		b.body = append(b.body, doc...)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			b.body = append(b.body, '\n')
		}
		b.origins = append(b.origins, origin{file: file, index: i + 1})
	}
}

// splitDocuments splits a YAML stream on "---" separator lines and drops
// empty documents. A JSON file is one document.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if !isBlankDocument(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if isSeparator(line) {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

func isSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	rest := line[3:]
	return rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '#'
}

func isBlankDocument(doc []byte) bool {
	for line := range strings.SplitSeq(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && t != "..." {
			return false
		}
	}
	return true
}

// addFileFlag registers the repeatable -f flag.
func addFileFlag(cmd *cobra.Command, files *[]string) {
	cmd.Flags().StringArrayVarP(files, "filename", "f", nil, "file, directory (its .yaml/.yml/.json files, not recursive) or - for stdin; repeatable")
}

// explainRejection prints the diagnostics of an AdmissionRejected answer
// with the file each document came from. It returns err unchanged when err
// carries no diagnostics.
func explainRejection(w io.Writer, err error, b *bundle) error {
	diags := client.Diagnostics(err)
	if len(diags) == 0 {
		return err
	}
	fmt.Fprintf(w, "error: %d problem(s) found; nothing was written\n", len(diags))
	for _, d := range diags {
		fmt.Fprintln(w, "error: "+formatDiagnostic(d, b.origins))
	}
	return &exitError{code: ExitRejected}
}
