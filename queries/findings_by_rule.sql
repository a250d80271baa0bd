-- name: findings_by_rule
-- description: Findings counted by rule and severity over a range of gaming days, worst first.
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- example: pitwatch query findings_by_rule --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28

with

findings_in_range as (
    select * from findings
    where gaming_day between $from_day and $to_day
),

severity_order as (
    select * from (values ('critical', 1), ('major', 2), ('minor', 3), ('info', 4)) as s (severity, severity_rank)
),

counted as (
    select
        rule_id,
        severity,
        count(*) as findings,
        count(distinct table_id) as tables,
        count(distinct dealer_id) as dealers,
        min(gaming_day) as first_day,
        max(gaming_day) as last_day,
        min(source) as source
    from findings_in_range
    group by rule_id, severity
)

select
    counted.rule_id,
    counted.severity,
    counted.findings,
    counted.tables,
    counted.dealers,
    counted.first_day,
    counted.last_day,
    counted.source
from counted
left join severity_order using (severity)
order by coalesce(severity_order.severity_rank, 9), counted.findings desc, counted.rule_id
