-- name: findings_per_dealer
-- description: Findings per 100 rounds dealt, per dealer, over a range of gaming days (rounds and findings by the dealer on duty); dealer_name from seeds_dealers (--dealers FILE).
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- example: pitwatch query findings_per_dealer --lake lake --param from_day=2026-11-01 --param to_day=2026-11-30

with

rounds_in_range as (
    select * from rounds
    where gaming_day between $from_day and $to_day
      and dealer_id is not null
),

findings_in_range as (
    select * from findings
    where gaming_day between $from_day and $to_day
      and dealer_id is not null
),

rounds_per_dealer as (
    select
        dealer_id,
        count(*) as rounds,
        count(distinct table_id) as tables
    from rounds_in_range
    group by dealer_id
),

findings_per_dealer as (
    select
        dealer_id,
        count(*) as findings,
        count(*) filter (where severity = 'critical') as critical,
        count(*) filter (where severity = 'major') as major,
        count(*) filter (where severity = 'minor') as minor,
        count(*) filter (where severity = 'info') as info
    from findings_in_range
    group by dealer_id
),

joined as (
    select
        coalesce(r.dealer_id, f.dealer_id) as dealer_id,
        coalesce(r.rounds, 0) as rounds,
        coalesce(r.tables, 0) as tables,
        coalesce(f.findings, 0) as findings,
        coalesce(f.critical, 0) as critical,
        coalesce(f.major, 0) as major,
        coalesce(f.minor, 0) as minor,
        coalesce(f.info, 0) as info
    from rounds_per_dealer as r
    full outer join findings_per_dealer as f on r.dealer_id = f.dealer_id
)

select
    dealer_id,
    (select name from seeds_dealers where id = joined.dealer_id) as dealer_name,
    rounds,
    tables,
    findings,
    critical,
    major,
    minor,
    info,
    case when rounds > 0 then round(100.0 * findings / rounds, 2)::double end as per_100_rounds
from joined
order by per_100_rounds desc nulls last, findings desc, dealer_id
