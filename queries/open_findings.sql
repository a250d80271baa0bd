-- name: open_findings
-- description: Findings still to deal with (status open: no review yet, or escalated by the latest review), most severe first (critical, major, minor, info), oldest first within a severity; with the dealer's name and the latest review.
-- param from_day: date = 0001-01-01  first gaming day (inclusive; default: the lake's first)
-- param to_day: date = 9999-12-31  last gaming day (inclusive; default: the lake's last)
-- param table_id: string = *  the table, e.g. BAC-07; * for every table
-- example: pitwatch query open_findings --lake lake
-- example: pitwatch query open_findings --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28 --param table_id=BAC-07

with

findings_in_range as (
    select * from findings
    where gaming_day between $from_day and $to_day
      and ($table_id = '*' or table_id = $table_id)
),

still_open as (
    select * from findings_in_range
    where status in ('open', 'escalated')
)

select
    status,
    severity,
    gaming_day,
    ts,
    ts_offset,
    table_id,
    game,
    rule_id,
    title,
    dealer_id,
    (select name from seeds_dealers where id = still_open.dealer_id) as dealer_name,
    pack_id,
    round_id,
    seat,
    expected,
    actual,
    reviewed_by,
    reviewed_at,
    finding_id
from still_open
order by
    case severity when 'critical' then 0 when 'major' then 1 when 'minor' then 2 when 'info' then 3 else 4 end,
    ts,
    finding_id
