-- name: findings_changed_since
-- description: What later runs changed in days already reported: every finding a run after `since` added to, removed from or changed on a gaming day an earlier run had already written (a late file, a table that played through the cutoff, a file read again), with the run that did it and its start (to the second: the head of its id, lake/runs.py new_run_id; the runs table is never read, so the cost does not grow with the lake's age); a day's first write is no change.
-- param since: string  a run id (the other runs that started in its second or later), or a time: ISO 8601, no offset meaning UTC, or a date YYYY-MM-DD, its midnight UTC (the runs that started at or after it, to the second)
-- example: pitwatch query findings_changed_since --lake lake --param since=2026-11-28

with

-- a run id starts with its start time to the second (lake/runs.py new_run_id: 20261129T070000Z-1a2b3c4d),
-- so neither side needs the runs table, whose records grow with every run and every review
run_id_form as (
    select regexp_full_match($since, '[0-9]{8}T[0-9]{6}Z-[0-9a-f]+') as is_run
),

as_time as (
    select try_cast(
        case
            when regexp_full_match($since, '[0-9]{4}-[0-9]{2}-[0-9]{2}') then $since || 'T00:00:00+00:00'
            when regexp_full_match($since, '.*(Z|[+-][0-9]{2}(:?[0-9]{2})?)') then $since
            else $since || '+00:00'
        end as timestamptz) as t
),

bound as (
    select
        (select is_run from run_id_form) as is_run,
        case
            when (select is_run from run_id_form)
                 and try_strptime(left($since, 16), '%Y%m%dT%H%M%SZ') is not null
                then timezone('UTC', try_strptime(left($since, 16), '%Y%m%dT%H%M%SZ'))
            when not (select is_run from run_id_form) and (select t from as_time) is not null
                then (select t from as_time)
            else error('parameter since: ''' || $since || ''' is neither a run id (e.g. 20261129T070000Z-1a2b3c4d) '
                       || 'nor a time (ISO 8601, or a date YYYY-MM-DD)')
        end as after
),

changes as (
    select c.*, timezone('UTC', try_strptime(left(c.run_id, 16), '%Y%m%dT%H%M%SZ')) as run_started
    from finding_changes as c
),

-- a run id: the runs but it that started in its second or later (two runs in one second are not told
-- apart: the change is shown, never lost); a time: the runs whose start's second ends after it
later_changes as (
    select c.*
    from changes as c, bound
    where (bound.is_run and c.run_started >= bound.after and c.run_id <> $since)
       or (not bound.is_run and c.run_started > bound.after - interval 1 second)
)

select
    c.run_id,
    c.run_started,
    c.change,
    c.gaming_day,
    c.finding_id,
    c.rule_id,
    c.severity,
    c.table_id,
    c.round_id,
    c.dealer_id,
    c.ts,
    c.changed_columns
from later_changes as c
order by c.run_started, c.run_id, c.gaming_day, c.table_id, c.ts, c.rule_id, c.finding_id, c.change
