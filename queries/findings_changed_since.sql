-- name: findings_changed_since
-- description: What later runs changed in days already reported: every finding a run after `since` added to, removed from or changed on a gaming day an earlier run had already written (a late file, a table that played through the cutoff, a file read again), with the run that did it and its start; a day's first write is no change.
-- param since: string  a run id (the runs that started after it), or a time: ISO 8601, no offset meaning UTC, or a date YYYY-MM-DD, its midnight UTC (the runs that started at or after it)
-- example: pitwatch query findings_changed_since --lake lake --param since=2026-11-28

with

named_run as (
    select started from runs where run_id = $since
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
        (select count(*) from named_run) > 0 as is_run,
        case
            when (select count(*) from named_run) > 0 then (select max(started) from named_run)
            when (select t from as_time) is not null then (select t from as_time)
            else error('parameter since: ''' || $since || ''' is neither a run id of this lake nor a time '
                       || '(ISO 8601, or a date YYYY-MM-DD)')
        end as after
),

later_runs as (
    select runs.run_id, runs.started
    from runs, bound
    where (bound.is_run and runs.started > bound.after)
       or (not bound.is_run and runs.started >= bound.after)
)

select
    c.run_id,
    r.started as run_started,
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
from finding_changes as c
join later_runs as r using (run_id)
order by r.started, c.run_id, c.gaming_day, c.table_id, c.ts, c.rule_id, c.finding_id, c.change
