-- name: table_day_summary
-- description: One table's gaming days: rounds, voided rounds, dealers, packs, cards drawn and findings by severity.
-- param table_id: string  the table, e.g. BAC-01
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- example: pitwatch query table_day_summary --lake lake --param table_id=BAC-01 --param from_day=2026-11-22 --param to_day=2026-11-28

with

table_rounds as (
    select * from rounds
    where table_id = $table_id and gaming_day between $from_day and $to_day
),

table_packs as (
    select * from packs
    where table_id = $table_id and gaming_day between $from_day and $to_day
),

table_findings as (
    select * from findings
    where table_id = $table_id and gaming_day between $from_day and $to_day
),

rounds_per_day as (
    select
        gaming_day,
        string_agg(distinct game, ', ' order by game) as games,
        count(*) as rounds,
        count(*) filter (where voided) as voided_rounds,
        count(distinct dealer_id) as dealers,
        min(started) as first_round_started,
        max(ended) as last_round_ended
    from table_rounds
    group by gaming_day
),

packs_per_day as (
    select
        gaming_day,
        count(*) as packs,
        sum(cards_drawn) as cards_drawn
    from table_packs
    group by gaming_day
),

findings_per_day as (
    select
        gaming_day,
        count(*) as findings,
        count(*) filter (where severity = 'critical') as critical,
        count(*) filter (where severity = 'major') as major,
        count(*) filter (where severity = 'minor') as minor,
        count(*) filter (where severity = 'info') as info
    from table_findings
    group by gaming_day
),

days as (
    select gaming_day from rounds_per_day
    union
    select gaming_day from packs_per_day
    union
    select gaming_day from findings_per_day
)

select
    days.gaming_day,
    r.games,
    coalesce(r.rounds, 0) as rounds,
    coalesce(r.voided_rounds, 0) as voided_rounds,
    coalesce(r.dealers, 0) as dealers,
    coalesce(p.packs, 0) as packs,
    coalesce(p.cards_drawn, 0) as cards_drawn,
    coalesce(f.findings, 0) as findings,
    coalesce(f.critical, 0) as critical,
    coalesce(f.major, 0) as major,
    coalesce(f.minor, 0) as minor,
    coalesce(f.info, 0) as info,
    r.first_round_started,
    r.last_round_ended
from days
left join rounds_per_day as r using (gaming_day)
left join packs_per_day as p using (gaming_day)
left join findings_per_day as f using (gaming_day)
order by days.gaming_day
