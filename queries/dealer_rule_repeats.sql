-- name: dealer_rule_repeats
-- description: Dealers with the same rule at least min_count times in the `days` gaming days ending on to_day (e.g. who skipped burns this week); rule_id * means every rule; dealer_name from seeds_dealers (--dealers FILE).
-- param to_day: date  last gaming day of the window (inclusive)
-- param rule_id: string = *  the rule, e.g. BURN_SKIPPED; * for every rule
-- param days: int[1..366] = 7  length of the window in gaming days
-- param min_count: int[1..] = 1  least number of findings of the rule per dealer in the window
-- example: pitwatch query dealer_rule_repeats --lake lake --param rule_id=BURN_SKIPPED --param to_day=2026-11-28
-- example: pitwatch query dealer_rule_repeats --lake lake --param to_day=2026-11-30 --param days=30 --param min_count=3

with

findings_in_window as (
    select * from findings
    where gaming_day > $to_day - $days
      and gaming_day <= $to_day
      and ($rule_id = '*' or rule_id = $rule_id)
      and dealer_id is not null
),

per_dealer_rule as (
    select
        dealer_id,
        rule_id,
        min(severity) as severity,
        count(*) as findings,
        count(distinct gaming_day) as days_with_findings,
        string_agg(distinct table_id, ', ' order by table_id) as tables,
        min(ts) as first_ts,
        max(ts) as last_ts
    from findings_in_window
    group by dealer_id, rule_id
)

select
    r.dealer_id,
    d.name as dealer_name,
    r.rule_id,
    r.severity,
    r.findings,
    r.days_with_findings,
    r.tables,
    r.first_ts,
    r.last_ts
from per_dealer_rule as r
left join seeds_dealers as d on d.id = r.dealer_id
where r.findings >= $min_count
order by r.findings desc, r.dealer_id, r.rule_id
