package rag

import (
	"errors"
	"fmt"
)

// Sentinel errors of the service; the HTTP layer maps them onto the
// documented error codes.
var (
	// ErrNotFound: the RAGIndex or KnowledgeSource does not exist.
	ErrNotFound = errors.New("rag: not found")
	// ErrInvalid: a request or a resource spec the service cannot use.
	ErrInvalid = errors.New("rag: invalid")
	// ErrFetch: a knowledge source could not be read.
	ErrFetch = errors.New("rag: fetch failed")
	// ErrIndexGone: the index a refresh writes was deleted meanwhile; it
	// is an ErrNotFound too.
	ErrIndexGone = fmt.Errorf("%w: index deleted", ErrNotFound)
)
