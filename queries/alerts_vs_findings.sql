-- name: alerts_vs_findings
-- description: A gaming day's live alerts against the batch's findings: confirmed (same finding_id), not confirmed by the batch, never alerted; live-only alerts (provisional card alerts, their clearing, silence notices: never findings) apart, a provisional one with the finding it announced.
-- param gaming_day: date  the gaming day to compare
-- example: pitwatch query alerts_vs_findings --lake lake --param gaming_day=2026-11-28

with

day_alerts as (
    -- one row per alert: two watchers raising one finding is one alert, by the first watcher
    select
        finding_id,
        min(rule_id) as rule_id,
        min(severity) as severity,
        min(table_id) as table_id,
        min(ts) as alerted_ts,
        string_agg(distinct watch_id, ',' order by watch_id) as watch_ids,
        min(provisional_id) as provisional_id,
        bool_or(coalesce(live_only, false)) as live_only
    from alerts
    where gaming_day = $gaming_day
    group by finding_id
),

announced as (
    -- a provisional alert's final finding: the alert naming it in provisional_id
    select provisional_id, min(finding_id) as finding_id
    from alerts
    where gaming_day = $gaming_day and provisional_id is not null and not coalesce(live_only, false)
    group by provisional_id
),

day_findings as (
    select finding_id, rule_id, severity, table_id, ts
    from findings
    where gaming_day = $gaming_day
),

compared as (
    select
        case
            when day_alerts.finding_id is null then 'never alerted'
            when day_alerts.live_only then 'live only'
            when day_findings.finding_id is null then 'not confirmed'
            else 'confirmed'
        end as outcome,
        coalesce(day_findings.finding_id, day_alerts.finding_id) as finding_id,
        coalesce(day_findings.rule_id, day_alerts.rule_id) as rule_id,
        coalesce(day_findings.severity, day_alerts.severity) as severity,
        coalesce(day_findings.table_id, day_alerts.table_id) as table_id,
        day_findings.ts as finding_ts,
        day_alerts.alerted_ts,
        day_alerts.watch_ids,
        day_alerts.provisional_id,
        case when day_alerts.live_only then announced.finding_id end as announced_finding_id
    from day_alerts
    full outer join day_findings on day_alerts.finding_id = day_findings.finding_id
    left join announced on announced.provisional_id = day_alerts.finding_id
)

select
    outcome,
    finding_id,
    rule_id,
    severity,
    table_id,
    finding_ts,
    alerted_ts,
    watch_ids,
    provisional_id,
    announced_finding_id
from compared
order by
    case outcome when 'confirmed' then 1 when 'not confirmed' then 2 when 'never alerted' then 3 else 4 end,
    coalesce(finding_ts, alerted_ts),
    finding_id
