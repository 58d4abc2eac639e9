package aos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// parseJSON decodes one JSON text into the generic values the schema
// validator walks: map[string]any, []any, string, bool, nil and
// json.Number, which keeps every number exactly as sent. It refuses
// invalid UTF-8 (encoding/json would silently replace it) and anything
// after the value.
func parseJSON(b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("text is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, &syntaxError{msg: syn.Error(), offset: syn.Offset}
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty body")
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &syntaxError{msg: "data after the JSON value", offset: dec.InputOffset()}
	}
	return v, nil
}

// syntaxError is a JSON syntax error with the byte offset it was found at.
type syntaxError struct {
	msg    string
	offset int64
}

func (e *syntaxError) Error() string {
	return e.msg + " (at byte " + strconv.FormatInt(e.offset, 10) + ")"
}

// marshalJSON encodes v like json.Marshal but leaves <, > and & as they
// are: the text goes to JSON clients, never into HTML, and re-encoded
// params should read like what the sender wrote.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
