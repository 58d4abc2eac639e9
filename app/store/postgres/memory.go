package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/warden-dev/warden/app/store"
)

// The memory service's items. None of these statements touches
// tenant_state: items are plain rows, and a write of one memory does not
// queue behind the tenant's resource writers.
const (
	qMemoryInsert = `INSERT INTO memory_items (tenant_id, namespace, memory, id, agent, conversation, text, metadata,
		summary, summarized_into, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12)`
	qMemoryDelete = `DELETE FROM memory_items
		WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND id = $4 AND ($5 = '' OR agent = $5)`
	qMemoryPurge  = `DELETE FROM memory_items WHERE tenant_id = $1 AND namespace = $2 AND memory = $3`
	qMemoryExpire = `DELETE FROM memory_items
		WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND expires_at <= $4`
	// qMemoryCap deletes every item behind the newest $4.
	qMemoryCap = `DELETE FROM memory_items
		WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND id IN (
			SELECT id FROM memory_items WHERE tenant_id = $1 AND namespace = $2 AND memory = $3
			ORDER BY created_at DESC, id DESC OFFSET $4)`
	qMemoryCompactDelete = `DELETE FROM memory_items
		WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND id = ANY($4::text[])`
	qMemoryCompactMark = `UPDATE memory_items SET summarized_into = $5
		WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND id = ANY($4::text[]) AND summarized_into = ''`
)

// MemoryItemInsert stores a new item.
func (t *writeTx) MemoryItemInsert(ctx context.Context, it store.MemoryItem) (store.MemoryItem, error) {
	it, meta, err := store.PrepareMemoryItem(it, t.s.now())
	if err != nil {
		return it, err
	}
	if _, err := t.q.Exec(ctx, qMemoryInsert, t.tenant, it.Namespace, it.Memory, it.ID, it.Agent, it.Conversation, it.Text,
		string(meta), it.Summary, it.SummarizedInto, it.CreatedAt, it.ExpiresAt); err != nil {
		return it, interpretError(fmt.Errorf("insert memory item %s/%s/%s: %w", it.Namespace, it.Memory, it.ID, err))
	}
	return it, nil
}

// MemoryItemDelete deletes one item, store.ErrNotFound when there is none.
func (t *writeTx) MemoryItemDelete(ctx context.Context, k store.MemoryItemKey) error {
	tag, err := t.q.Exec(ctx, qMemoryDelete, t.tenant, k.Namespace, k.Memory, k.ID, k.Agent)
	if err != nil {
		return interpretError(fmt.Errorf("delete memory item %s/%s/%s: %w", k.Namespace, k.Memory, k.ID, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("memory item %s/%s/%s: %w", k.Namespace, k.Memory, k.ID, store.ErrNotFound)
	}
	return nil
}

// MemoryPurge deletes every item of a memory.
func (t *writeTx) MemoryPurge(ctx context.Context, namespace, memory string) (int, error) {
	tag, err := t.q.Exec(ctx, qMemoryPurge, t.tenant, namespace, memory)
	if err != nil {
		return 0, interpretError(fmt.Errorf("purge memory %s/%s: %w", namespace, memory, err))
	}
	return int(tag.RowsAffected()), nil
}

// MemoryItemTrim deletes expired items and those beyond the cap.
func (t *writeTx) MemoryItemTrim(ctx context.Context, tr store.MemoryTrim) (int, error) {
	tr, err := store.PrepareMemoryTrim(tr, t.s.now())
	if err != nil {
		return 0, err
	}
	tag, err := t.q.Exec(ctx, qMemoryExpire, t.tenant, tr.Namespace, tr.Memory, tr.Now)
	if err != nil {
		return 0, interpretError(fmt.Errorf("expire memory items of %s/%s: %w", tr.Namespace, tr.Memory, err))
	}
	n := int(tag.RowsAffected())
	if tr.Keep > 0 {
		tag, err := t.q.Exec(ctx, qMemoryCap, t.tenant, tr.Namespace, tr.Memory, tr.Keep)
		if err != nil {
			return n, interpretError(fmt.Errorf("cap memory items of %s/%s: %w", tr.Namespace, tr.Memory, err))
		}
		n += int(tag.RowsAffected())
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
	q, args := qMemoryCompactMark, []any{t.tenant, c.Namespace, c.Memory, c.IDs, c.SummaryID}
	if c.Delete {
		q, args = qMemoryCompactDelete, args[:4]
	}
	tag, err := t.q.Exec(ctx, q, args...)
	if err != nil {
		return 0, interpretError(fmt.Errorf("compact memory items of %s/%s: %w", c.Namespace, c.Memory, err))
	}
	return int(tag.RowsAffected()), nil
}

// MemoryItemQuery returns the items of one memory matching q, newest first.
func (t *readTx) MemoryItemQuery(ctx context.Context, q store.MemoryQuery) ([]store.MemoryItem, error) {
	q, filter, err := store.PrepareMemoryQuery(q, t.s.now())
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(`SELECT id, agent, conversation, text, metadata, summary, summarized_into, created_at, expires_at
		FROM memory_items WHERE tenant_id = $1 AND namespace = $2 AND memory = $3 AND (expires_at IS NULL OR expires_at > $4)`)
	args := []any{t.tenant, q.Namespace, q.Memory, q.Now}
	add := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&sb, cond, len(args))
	}
	if q.Agent != "" {
		add(` AND agent = $%d`, q.Agent)
	}
	if q.Conversation != "" {
		add(` AND conversation = $%d`, q.Conversation)
	}
	if filter != nil {
		add(` AND metadata @> $%d::jsonb`, string(filter))
	}
	if !q.Since.IsZero() {
		add(` AND created_at >= $%d`, q.Since)
	}
	if !q.Before.IsZero() {
		add(` AND created_at < $%d`, q.Before)
	}
	if !q.IncludeSummarized {
		sb.WriteString(` AND summarized_into = ''`)
	}
	if q.ExcludeSummaries {
		sb.WriteString(` AND NOT summary`)
	}
	add(` ORDER BY created_at DESC, id DESC LIMIT $%d`, q.Limit)
	rows, err := t.q.Query(ctx, sb.String(), args...)
	if err != nil {
		return nil, interpretError(fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err))
	}
	defer rows.Close()
	var out []store.MemoryItem
	for rows.Next() {
		it := store.MemoryItem{Namespace: q.Namespace, Memory: q.Memory}
		var meta []byte
		var expires *time.Time
		if err := rows.Scan(&it.ID, &it.Agent, &it.Conversation, &it.Text, &meta, &it.Summary, &it.SummarizedInto,
			&it.CreatedAt, &expires); err != nil {
			return nil, fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err)
		}
		if err := json.Unmarshal(meta, &it.Metadata); err != nil {
			return nil, fmt.Errorf("query memory %s/%s: item %s metadata: %w", q.Namespace, q.Memory, it.ID, err)
		}
		it.CreatedAt = it.CreatedAt.UTC()
		if expires != nil {
			e := expires.UTC()
			it.ExpiresAt = &e
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query memory %s/%s: %w", q.Namespace, q.Memory, err)
	}
	return out, nil
}
