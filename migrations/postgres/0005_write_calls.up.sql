-- warden_write_call applies one write of Store.WriteCalls (app/store,
-- CallWriter) inside the caller's transaction: the tool gateway sends a
-- whole batch of tool-call writes (BEGIN, set_config, one call of this
-- function per write, pg_notify, COMMIT) as one pipelined round trip, so
-- the work that depends on what the database holds (does the claim hold,
-- does a charge pass its cap, which resourceVersion comes next) runs here
-- rather than as a round trip each.
--
-- Its parts run in the order CallWriter documents: the status update with
-- its resourceVersion precondition (a stale record sets conflict and writes
-- nothing), the idempotency claim (a claim held by another call returns its
-- holder and writes nothing more), the usage charges, all or none (a
-- refused charge takes back the others, releases the claim just taken and
-- returns its index), the creates, the release and the events. The statements
-- are those of the driver's Tx methods (app/store/postgres/tx.go,
-- gateway.go); keep them in step.
--
-- Versions and event sequence numbers: like every write of the tenant, the
-- batch first locks the tenant's tenant_state row, with
-- warden_write_calls_begin, which copies its counters into the
-- transaction-local settings warden.write_rv and warden.write_seq. Each
-- call takes its numbers from there and warden_write_calls_end writes them
-- back once. (Updating the row once per write instead would pile up
-- versions of it inside the transaction that every later write walks.)
-- Commit order stays version order.
--
-- It runs with the caller's rights (SECURITY INVOKER): row-level security
-- applies to every statement, with the tenant the transaction set.
CREATE FUNCTION warden_write_call(
    p_update_kind text, p_update_namespace text, p_update_name text, p_update_rv bigint,
    p_update_labels text, p_update_object text,
    p_claim_namespace text, p_claim_key text, p_claim_call text,
    p_claim_now timestamptz, p_claim_expiry timestamptz, p_claim_force boolean,
    p_charge_keys text[], p_charge_windows timestamptz[], p_charge_calls bigint[], p_charge_costs float8[],
    p_charge_max_calls bigint[], p_charge_max_costs float8[],
    p_create_kinds text[], p_create_namespaces text[], p_create_names text[], p_create_uids text[],
    p_create_labels text[], p_create_objects text[],
    p_release_namespace text, p_release_key text, p_release_call text,
    p_event_types text[], p_event_times timestamptz[], p_event_namespaces text[], p_event_subjects text[],
    p_event_datas text[],
    OUT conflict boolean, OUT holder text, OUT exceeded integer,
    OUT total_calls bigint[], OUT total_costs float8[], OUT first_rv bigint, OUT first_seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_tenant  text := current_setting('warden.tenant_id', true);
    v_rv      bigint;
    v_seq     bigint;
    v_claimed boolean := false;
    v_n       integer;
    v_i       integer;
    v_calls   bigint;
    v_cost    float8;
    v_object  jsonb;
BEGIN
    IF v_tenant IS NULL OR v_tenant = '' THEN
        RAISE EXCEPTION 'warden_write_call: the transaction names no tenant' USING ERRCODE = '42501';
    END IF;
    conflict := false;
    holder := '';
    exceeded := -1;
    v_rv := nullif(current_setting('warden.write_rv', true), '')::bigint;
    v_seq := nullif(current_setting('warden.write_seq', true), '')::bigint;
    IF v_rv IS NULL OR v_seq IS NULL THEN
        RAISE EXCEPTION 'warden_write_call: call warden_write_calls_begin first in the transaction' USING ERRCODE = '55000';
    END IF;
    first_rv := v_rv + 1;
    first_seq := v_seq + 1;

    <<body>>
    BEGIN
        -- 1. The status update, its precondition the stored version.
        IF p_update_name IS NOT NULL THEN
            IF p_update_object IS NULL THEN
                PERFORM 1 FROM resources r
                    WHERE r.tenant_id = v_tenant AND r.kind = p_update_kind AND r.namespace = p_update_namespace
                        AND r.name = p_update_name AND r.rv = p_update_rv;
                IF NOT FOUND THEN
                    conflict := true;
                    EXIT body;
                END IF;
            ELSE
                v_object := jsonb_set(p_update_object::jsonb, '{metadata,resourceVersion}', to_jsonb((v_rv + 1)::text));
                UPDATE resources r SET rv = v_rv + 1, labels = p_update_labels::jsonb, object = v_object
                    WHERE r.tenant_id = v_tenant AND r.kind = p_update_kind AND r.namespace = p_update_namespace
                        AND r.name = p_update_name AND r.rv = p_update_rv;
                IF NOT FOUND THEN
                    conflict := true;
                    EXIT body;
                END IF;
                v_rv := v_rv + 1;
                INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
                    VALUES (v_tenant, v_rv, 'MODIFIED', p_update_kind, p_update_namespace, p_update_name, v_object);
            END IF;
        END IF;

        -- 2. The idempotency claim.
        IF p_claim_key IS NOT NULL THEN
            INSERT INTO idempotency_keys AS k (tenant_id, namespace, key, call, claimed_at)
                VALUES (v_tenant, p_claim_namespace, p_claim_key, p_claim_call, p_claim_now)
                ON CONFLICT (tenant_id, namespace, key) DO UPDATE
                SET call = excluded.call, claimed_at = excluded.claimed_at, released = false
                WHERE k.released OR k.claimed_at <= p_claim_expiry OR p_claim_force;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            IF v_n = 0 THEN
                SELECT k.call INTO holder FROM idempotency_keys k
                    WHERE k.tenant_id = v_tenant AND k.namespace = p_claim_namespace AND k.key = p_claim_key;
                IF holder <> p_claim_call THEN
                    EXIT body;
                END IF;
                holder := '';
            ELSE
                v_claimed := true;
            END IF;
        END IF;

        -- 3. The usage charges, all or none.
        v_n := coalesce(array_length(p_charge_keys, 1), 0);
        IF v_n > 0 THEN
            total_calls := array_fill(0::bigint, ARRAY[v_n]);
            total_costs := array_fill(0::float8, ARRAY[v_n]);
            FOR v_i IN 1..v_n LOOP
                IF (p_charge_max_calls[v_i] > 0 AND p_charge_calls[v_i] > p_charge_max_calls[v_i])
                    OR (p_charge_max_costs[v_i] > 0 AND p_charge_costs[v_i] > p_charge_max_costs[v_i]) THEN
                    exceeded := v_i - 1;
                    EXIT;
                END IF;
                INSERT INTO usage_counters AS u (tenant_id, key, window_start, calls, cost)
                    VALUES (v_tenant, p_charge_keys[v_i], p_charge_windows[v_i], p_charge_calls[v_i], p_charge_costs[v_i])
                    ON CONFLICT (tenant_id, key, window_start) DO UPDATE
                    SET calls = u.calls + excluded.calls, cost = u.cost + excluded.cost
                    WHERE (p_charge_max_calls[v_i] = 0 OR u.calls + excluded.calls <= p_charge_max_calls[v_i])
                        AND (p_charge_max_costs[v_i] = 0 OR u.cost + excluded.cost <= p_charge_max_costs[v_i])
                    RETURNING u.calls, u.cost INTO v_calls, v_cost;
                IF NOT FOUND THEN
                    exceeded := v_i - 1;
                    EXIT;
                END IF;
                total_calls[v_i] := v_calls;
                total_costs[v_i] := v_cost;
            END LOOP;
            IF exceeded >= 0 THEN
                FOR v_i IN 1..exceeded LOOP
                    UPDATE usage_counters u SET calls = u.calls - p_charge_calls[v_i], cost = u.cost - p_charge_costs[v_i]
                        WHERE u.tenant_id = v_tenant AND u.key = p_charge_keys[v_i] AND u.window_start = p_charge_windows[v_i];
                END LOOP;
                FOR v_i IN 1..v_n LOOP
                    SELECT u.calls, u.cost INTO v_calls, v_cost FROM usage_counters u
                        WHERE u.tenant_id = v_tenant AND u.key = p_charge_keys[v_i] AND u.window_start = p_charge_windows[v_i];
                    total_calls[v_i] := coalesce(v_calls, 0);
                    total_costs[v_i] := coalesce(v_cost, 0);
                END LOOP;
                IF v_claimed THEN
                    UPDATE idempotency_keys k SET released = true
                        WHERE k.tenant_id = v_tenant AND k.namespace = p_claim_namespace AND k.key = p_claim_key
                            AND k.call = p_claim_call AND NOT k.released;
                END IF;
                EXIT body;
            END IF;
        END IF;

        -- 4. The creates, each with the next version. (Plain statements in
        -- a loop: a batch holds one or two, and a set-returning insert
        -- feeding the change log costs twice as much.)
        FOR v_i IN 1..coalesce(array_length(p_create_names, 1), 0) LOOP
            v_rv := v_rv + 1;
            v_object := jsonb_set(p_create_objects[v_i]::jsonb, '{metadata,resourceVersion}', to_jsonb(v_rv::text));
            INSERT INTO resources (tenant_id, kind, namespace, name, uid, rv, labels, object)
                VALUES (v_tenant, p_create_kinds[v_i], p_create_namespaces[v_i], p_create_names[v_i], p_create_uids[v_i],
                    v_rv, p_create_labels[v_i]::jsonb, v_object);
            INSERT INTO changes (tenant_id, rv, type, kind, namespace, name, object)
                VALUES (v_tenant, v_rv, 'ADDED', p_create_kinds[v_i], p_create_namespaces[v_i], p_create_names[v_i], v_object);
        END LOOP;

        -- 5. The release.
        IF p_release_key IS NOT NULL THEN
            UPDATE idempotency_keys k SET released = true
                WHERE k.tenant_id = v_tenant AND k.namespace = p_release_namespace AND k.key = p_release_key
                    AND k.call = p_release_call AND NOT k.released;
        END IF;

        -- 6. The events, each with the next sequence number.
        FOR v_i IN 1..coalesce(array_length(p_event_types, 1), 0) LOOP
            v_seq := v_seq + 1;
            INSERT INTO events (tenant_id, seq, type, time, namespace, subject, data)
                VALUES (v_tenant, v_seq, p_event_types[v_i], p_event_times[v_i], p_event_namespaces[v_i],
                    p_event_subjects[v_i], p_event_datas[v_i]::jsonb);
        END LOOP;
    END body;

    PERFORM set_config('warden.write_rv', v_rv::text, true), set_config('warden.write_seq', v_seq::text, true);
END
$$;

-- warden_write_calls_begin locks the tenant's counter row (creating it on
-- first use) for the rest of the transaction and copies its counters into
-- the transaction's settings.
CREATE FUNCTION warden_write_calls_begin() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_tenant text := current_setting('warden.tenant_id', true);
    v_rv     bigint;
    v_seq    bigint;
BEGIN
    IF v_tenant IS NULL OR v_tenant = '' THEN
        RAISE EXCEPTION 'warden_write_calls_begin: the transaction names no tenant' USING ERRCODE = '42501';
    END IF;
    INSERT INTO tenant_state AS s (tenant_id) VALUES (v_tenant)
        ON CONFLICT (tenant_id) DO UPDATE SET tenant_id = s.tenant_id
        RETURNING s.rv, s.event_seq INTO v_rv, v_seq;
    PERFORM set_config('warden.write_rv', v_rv::text, true), set_config('warden.write_seq', v_seq::text, true);
END
$$;

-- warden_write_calls_end writes the counters the batch allocated back to
-- the tenant's row.
CREATE FUNCTION warden_write_calls_end() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_tenant text := current_setting('warden.tenant_id', true);
    v_rv     bigint := current_setting('warden.write_rv')::bigint;
    v_seq    bigint := current_setting('warden.write_seq')::bigint;
BEGIN
    UPDATE tenant_state s SET rv = v_rv, event_seq = v_seq
        WHERE s.tenant_id = v_tenant AND (s.rv <> v_rv OR s.event_seq <> v_seq);
END
$$;

GRANT EXECUTE ON FUNCTION warden_write_call, warden_write_calls_begin, warden_write_calls_end TO warden_app;
