package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// The memory service's items: the Postgres driver's statements, with times
// as Unix microseconds, metadata as JSON text, and the metadata filter and
// id lists as JSON read with json_each. None touches tenant_state.
const (
	qMemoryInsert = `INSERT INTO memory_items (tenant_id, namespace, memory, id, agent, conversation, text, metadata,
		summary, summarized_into, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qMemoryDelete = `DELETE FROM memory_items
		WHERE tenant_id = ? AND namespace = ? AND memory = ? AND id = ? AND (?5 = '' OR agent = ?5)`
	qMemoryPurge  = `DELETE FROM memory_items WHERE tenant_id = ? AND namespace = ? AND memory = ?`
	qMemoryExpire = `DELETE FROM memory_items
		WHERE tenant_id = ? AND namespace = ? AND memory = ? AND expires_at <= ?`
	qMemoryCap = `DELETE FROM memory_items
		WHERE tenant_id = ?1 AND namespace = ?2 AND memory = ?3 AND id IN (
			SELECT id FROM memory_items WHERE tenant_id = ?1 AND namespace = ?2 AND memory = ?3
			ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?4)`
	qMemoryCompactDelete = `DELETE FROM memory_items
		WHERE tenant_id = ? AND namespace = ? AND memory = ? AND id IN (SELECT value FROM json_each(?))`
	qMemoryCompactMark = `UPDATE memory_items SET summarized_into = ?5
		WHERE tenant_id = ?1 AND namespace = ?2 AND memory = ?3 AND id IN (SELECT value FROM json_each(?4))
		AND summarized_into = ''`
	// qMemoryMetadata keeps an item only when no key of the filter (a JSON
	// object of scalars) is missing from its metadata or has another
	// value; a string never equals a number or boolean.
	qMemoryMetadata = ` AND NOT EXISTS (SELECT 1 FROM json_each(?) f
		WHERE json_extract(metadata, '$."' || f.key || '"') IS NOT f.value
		OR (f.type = 'text') IS NOT (json_type(metadata, '$."' || f.key || '"') = 'text'))`
)

// MemoryItemInsert stores a new item.
func (t *writeTx) MemoryItemInsert(ctx context.Context, it store.MemoryItem) (store.MemoryItem, error) {
	it, meta, err := store.PrepareMemoryItem(it, t.s.now())
	if err != nil {
		return it, err
	}
	var expires any
	if it.ExpiresAt != nil {
		expires = it.ExpiresAt.UnixMicro()
	}
	if _, err := t.q.ExecContext(ctx, qMemoryInsert, t.tenant, it.Namespace, it.Memory, it.ID, it.Agent, it.Conversation,
		it.Text, string(meta), it.Summary, it.SummarizedInto, it.CreatedAt.UnixMicro(), expires); err != nil {
		return it, interpretError(fmt.Errorf("insert memory item %s/%s/%s: %w", it.Namespace, it.Memory, it.ID, err))
	}
	return it, nil
}

// MemoryItemDelete deletes one item, store.ErrNotFound when there is none.
func (t *writeTx) MemoryItemDelete(ctx context.Context, k store.MemoryItemKey) error {
	res, err := t.q.ExecContext(ctx, qMemoryDelete, t.tenant, k.Namespace, k.Memory, k.ID, k.Agent)
	if err != nil {
		return fmt.Errorf("delete memory item %s/%s/%s: %w", k.Namespace, k.Memory, k.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete memory item %s/%s/%s: %w", k.Namespace, k.Memory, k.ID, err)
	} else if n == 0 {
		return fmt.Errorf("memory item %s/%s/%s: %w", k.Namespace, k.Memory, k.ID, store.ErrNotFound)
	}
	return nil
}

// MemoryPurge deletes every item of a memory.
func (t *writeTx) MemoryPurge(ctx context.Context, namespace, memory string) (int, error) {
	n, err := t.affected(ctx, qMemoryPurge, t.tenant, namespace, memory)
	if err != nil {
		return 0, fmt.Errorf("purge memory %s/%s: %w", namespace, memory, err)
	}
	return n, nil
}

// MemoryItemTrim deletes expired items and those beyond the cap.
func (t *writeTx) MemoryItemTrim(ctx context.Context, tr store.MemoryTrim) (int, error) {
	tr, err := store.PrepareMemoryTrim(tr, t.s.now())
	if err != nil {
		return 0, err
	}
	n, err := t.affected(ctx, qMemoryExpire, t.tenant, tr.Namespace, tr.Memory, tr.Now.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("expire memory items of %s/%s: %w", tr.Namespace, tr.Memory, err)
	}
	if tr.Keep > 0 {
		m, err := t.affected(ctx, qMemoryCap, t.tenant, tr.Namespace, tr.Memory, tr.Keep)
		if err != nil {
			return n, fmt.Errorf("cap memory items of %s/%s: %w", tr.Namespace, tr.Memory, err)
		}
		n += m
	}
	return n, nil
}

// MemoryItemCompact deletes or marks the items a summary replaced.
func (t *writeTx) MemoryItemCompact(ctx context.Context, c store.MemoryCompact) (int, error) {
	if c.Namespace == "" || c.Memory == "" || (!c.Delete && c.SummaryID == "") {
		return 0, fmt.Errorf("memory compact: namespace, memory and (unless deleting) the summary id are required")
	}
	if len(c.IDs) == 0 {
		return 0, nil
	}
	ids, err := json.Marshal(c.IDs)
	if err != nil {
		return 0, fmt.Errorf("memory compact: %w", err)
	}
	q, args := qMemoryCompactMark, []any{t.tenant, c.Namespace, c.Memory, string(ids), c.SummaryID}
	if c.Delete {
		q, args = qMemoryCompactDelete, args[:4]
	}
	n, err := t.affected(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("compact memory items of %s/%s: %w", c.Namespace, c.Memory, err)
	}
	return n, nil
}

func (t *writeTx) affected(ctx context.Context, q string, args ...any) (int, error) {
	res, err := t.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// MemoryItemQuery returns the items of one memory matching q, newest first.
func (t *readTx) MemoryItemQuery(ctx context.Context, q store.MemoryQuery) ([]store.MemoryItem, error) {
	q, filter, err := store.PrepareMemoryQuery(q, t.s.now())
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(`SELECT id, agent, conversation, text, metadata, summary, summarized_into, created_at, expires_at
		FROM memory_items WHERE tenant_id = ? AND namespace = ? AND memory = ? AND (expires_at IS NULL OR expires_at > ?)`)
	args := []any{t.tenant, q.Namespace, q.Memory, q.Now.UnixMicro()}
	add := func(cond string, v any) {
		sb.WriteString(cond)
		args = append(args, v)
	}
	if q.Agent != "" {
		add(` AND agent = ?`, q.Agent)
	}
	if q.Conversation != "" {
		add(` AND conversation = ?`, q.Conversation)
	}
	if filter != nil {
		add(qMemoryMetadata, string(filter))
	}
	if !q.Since.IsZero() {
		add(` AND created_at >= ?`, q.Since.UnixMicro())
	}
	if !q.Before.IsZero() {
		add(` AND created_at < ?`, q.Before.UnixMicro())
	}
	if !q.IncludeSummarized {
		sb.WriteString(` AND summarized_into = ''`)
	}
	if q.ExcludeSummaries {
		sb.WriteString(` AND NOT summary`)
	}
	add(` ORDER BY created_at DESC, id DESC LIMIT ?`, q.Limit)
	rows, err := t.q.QueryContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err)
	}
	defer func() { _ = rows.Close() }()
	var out []store.MemoryItem
	for rows.Next() {
		it := store.MemoryItem{Namespace: q.Namespace, Memory: q.Memory}
		var meta string
		var created int64
		var expires sql.NullInt64
		if err := rows.Scan(&it.ID, &it.Agent, &it.Conversation, &it.Text, &meta, &it.Summary, &it.SummarizedInto,
			&created, &expires); err != nil {
			return nil, fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err)
		}
		if err := json.Unmarshal([]byte(meta), &it.Metadata); err != nil {
			return nil, fmt.Errorf("query memory %s/%s: item %s metadata: %w", q.Namespace, q.Memory, it.ID, err)
		}
		it.CreatedAt = time.UnixMicro(created).UTC()
		if expires.Valid {
			e := time.UnixMicro(expires.Int64).UTC()
			it.ExpiresAt = &e
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err)
	}
	return out, nil
}
