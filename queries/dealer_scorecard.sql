-- name: dealer_scorecard
-- description: Per dealer over a range of gaming days, beside the same number of days before it: rounds, hands and hours dealt, rounds and hands per hour, findings by severity and per 100 rounds, confirmed errors (findings whose review status is confirmed) per 100 rounds, the three rules broken most (most often, then the most severe), and the change from the previous period; dealer_name from seeds_dealers (the lake's roster).
-- param from_day: date  first gaming day of the period (inclusive)
-- param to_day: date  last gaming day of the period (inclusive); the previous period is the same number of days just before from_day
-- param dealer_id: string = *  the dealer, e.g. D-1007; * for every dealer
-- example: pitwatch query dealer_scorecard --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28
-- example: pitwatch query dealer_scorecard --lake lake --param from_day=2026-11-01 --param to_day=2026-11-30 --param dealer_id=D-1007

-- hours: a dealer's stints: the runs of consecutive rounds at one table on one gaming day with
-- that dealer on duty (ordered by start): each from its first round's start to its last round's
-- end, summed. hands: the seats dealt in each round (rounds.seats_dealt). A dealer is listed when
-- they dealt a round or have a finding in the period; the previous period's measures are null
-- when they did neither then. A confirmed error is a finding whose latest review confirmed it
-- (findings.status: pitwatch review).

with

rounds_in_both as (
    select
        *,
        case when gaming_day >= $from_day then 'current' else 'previous' end as period
    from rounds
    where gaming_day between $from_day - cast($to_day - $from_day + 1 as integer) and $to_day
),

findings_in_both as (
    select
        *,
        case when gaming_day >= $from_day then 'current' else 'previous' end as period
    from findings
    where gaming_day between $from_day - cast($to_day - $from_day + 1 as integer) and $to_day
      and dealer_id is not null
      and ($dealer_id = '*' or dealer_id = $dealer_id)
),

ordered_rounds as (
    select
        *,
        lag(dealer_id) over (partition by table_id, gaming_day order by started, round_id) as dealer_before
    from rounds_in_both
    where started is not null
),

stint_numbers as (
    select
        *,
        sum(case when dealer_before is not distinct from dealer_id then 0 else 1 end)
            over (partition by table_id, gaming_day order by started, round_id) as stint
    from ordered_rounds
),

stints as (
    select
        dealer_id,
        period,
        epoch(max(ended) - min(started)) / 3600.0 as hours
    from stint_numbers
    where dealer_id is not null and ended is not null
    group by dealer_id, period, table_id, gaming_day, stint
),

hours_per_dealer as (
    select dealer_id, period, sum(hours) as hours
    from stints
    group by dealer_id, period
),

rounds_per_dealer as (
    select
        dealer_id,
        period,
        count(*) as rounds,
        coalesce(sum(len(seats_dealt)), 0) as hands
    from rounds_in_both
    where dealer_id is not null
      and ($dealer_id = '*' or dealer_id = $dealer_id)
    group by dealer_id, period
),

findings_per_dealer as (
    select
        dealer_id,
        period,
        count(*) as findings,
        count(*) filter (where severity = 'critical') as critical,
        count(*) filter (where severity = 'major') as major,
        count(*) filter (where severity = 'minor') as minor,
        count(*) filter (where severity = 'info') as info,
        count(*) filter (where status = 'confirmed') as confirmed
    from findings_in_both
    group by dealer_id, period
),

severities as (
    select * from (values ('critical', 1), ('major', 2), ('minor', 3), ('info', 4)) as s (severity, severity_rank)
),

rule_counts as (
    select
        f.dealer_id,
        f.rule_id,
        count(*) as times,
        row_number() over (
            partition by f.dealer_id order by count(*) desc, min(s.severity_rank), f.rule_id
        ) as place
    from findings_in_both as f
    left join severities as s on s.severity = f.severity
    where f.period = 'current'
    group by f.dealer_id, f.rule_id
),

top_rules as (
    select
        dealer_id,
        string_agg(rule_id || ' (' || times || ')', ', ' order by place) as top_rules
    from rule_counts
    where place <= 3
    group by dealer_id
),

measures as (
    select
        coalesce(r.dealer_id, f.dealer_id) as dealer_id,
        coalesce(r.period, f.period) as period,
        coalesce(r.rounds, 0) as rounds,
        coalesce(r.hands, 0) as hands,
        h.hours,
        coalesce(f.findings, 0) as findings,
        coalesce(f.critical, 0) as critical,
        coalesce(f.major, 0) as major,
        coalesce(f.minor, 0) as minor,
        coalesce(f.info, 0) as info,
        coalesce(f.confirmed, 0) as confirmed
    from rounds_per_dealer as r
    full outer join findings_per_dealer as f on r.dealer_id = f.dealer_id and r.period = f.period
    left join hours_per_dealer as h
        on h.dealer_id = coalesce(r.dealer_id, f.dealer_id) and h.period = coalesce(r.period, f.period)
),

rated as (
    select
        *,
        case when hours > 0 then rounds / hours end as rounds_per_hour,
        case when hours > 0 then hands / hours end as hands_per_hour,
        case when rounds > 0 then 100.0 * findings / rounds end as per_100_rounds,
        case when rounds > 0 then 100.0 * confirmed / rounds end as confirmed_per_100_rounds
    from measures
),

current_period as (
    select * from rated where period = 'current'
),

previous_period as (
    select * from rated where period = 'previous'
)

select
    c.dealer_id,
    (select name from seeds_dealers where id = c.dealer_id) as dealer_name,
    $from_day as from_day,
    $to_day as to_day,
    c.rounds,
    c.hands,
    round(c.hours, 2)::double as hours,
    round(c.rounds_per_hour, 1)::double as rounds_per_hour,
    round(c.hands_per_hour, 1)::double as hands_per_hour,
    c.findings,
    c.critical,
    c.major,
    c.minor,
    c.info,
    round(c.per_100_rounds, 2)::double as findings_per_100_rounds,
    c.confirmed as confirmed_errors,
    round(c.confirmed_per_100_rounds, 2)::double as confirmed_errors_per_100_rounds,
    t.top_rules,
    p.rounds as previous_rounds,
    round(p.hours, 2)::double as previous_hours,
    round(p.rounds_per_hour, 1)::double as previous_rounds_per_hour,
    round(p.hands_per_hour, 1)::double as previous_hands_per_hour,
    p.findings as previous_findings,
    round(p.per_100_rounds, 2)::double as previous_findings_per_100_rounds,
    round(p.confirmed_per_100_rounds, 2)::double as previous_confirmed_errors_per_100_rounds,
    round(c.rounds_per_hour - p.rounds_per_hour, 1)::double as change_rounds_per_hour,
    round(c.per_100_rounds - p.per_100_rounds, 2)::double as change_findings_per_100_rounds,
    round(c.confirmed_per_100_rounds - p.confirmed_per_100_rounds, 2)::double as change_confirmed_errors_per_100_rounds
from current_period as c
left join previous_period as p on p.dealer_id = c.dealer_id
left join top_rules as t on t.dealer_id = c.dealer_id
order by findings_per_100_rounds desc nulls last, c.findings desc, c.dealer_id
