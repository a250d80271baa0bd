-- name: stub_compliance
-- description: Stub-count compliance per three_bet_poker table (document 000 E) over a range of gaming days: rounds, stub counts, the longest run of rounds without a count, miscounts and the stub findings.
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- example: pitwatch query stub_compliance --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28

with

poker_rounds as (
    select * from rounds
    where game = 'three_bet_poker' and gaming_day between $from_day and $to_day
),

stub_counts as (
    select table_id, round_id, stub, layout
    from events
    where type = 'stub_counted' and gaming_day between $from_day and $to_day
),

stub_findings as (
    select * from findings
    where rule_id in ('STUB_COUNT_OVERDUE', 'STUB_MISCOUNT', 'STUB_EXPOSED', 'VOID_NOT_DECLARED')
      and gaming_day between $from_day and $to_day
),

counted_rounds as (
    select
        r.table_id,
        r.round_id,
        r.started,
        count(s.round_id) > 0 as counted,
        bool_or(s.stub + s.layout <> 52) as count_not_52
    from poker_rounds as r
    left join stub_counts as s on s.table_id = r.table_id and s.round_id = r.round_id
    group by r.table_id, r.round_id, r.started
),

-- rounds since the last count: a new streak starts after every counted round
streaks as (
    select
        *,
        sum(case when counted then 1 else 0 end) over (
            partition by table_id order by started, round_id rows between unbounded preceding and 1 preceding
        ) as streak_id
    from counted_rounds
),

streak_lengths as (
    select table_id, streak_id, count(*) filter (where not counted) as uncounted
    from streaks
    group by table_id, streak_id
),

per_table as (
    select
        c.table_id,
        count(*) as rounds,
        count(*) filter (where c.counted) as rounds_counted,
        count(*) filter (where c.count_not_52) as counts_not_52
    from counted_rounds as c
    group by c.table_id
),

findings_per_table as (
    select
        table_id,
        count(*) filter (where rule_id = 'STUB_COUNT_OVERDUE') as overdue,
        count(*) filter (where rule_id = 'STUB_MISCOUNT') as miscount,
        count(*) filter (where rule_id = 'STUB_EXPOSED') as exposed,
        count(*) filter (where rule_id = 'VOID_NOT_DECLARED') as void_not_declared
    from stub_findings
    group by table_id
)

select
    t.table_id,
    t.rounds,
    t.rounds_counted,
    round(100.0 * t.rounds_counted / t.rounds, 1)::double as pct_counted,
    (select max(uncounted) from streak_lengths as s where s.table_id = t.table_id) as longest_uncounted_run,
    t.counts_not_52,
    coalesce(f.overdue, 0) as overdue_findings,
    coalesce(f.miscount, 0) as miscount_findings,
    coalesce(f.exposed, 0) as exposed_findings,
    coalesce(f.void_not_declared, 0) as void_not_declared_findings
from per_table as t
left join findings_per_table as f using (table_id)
order by longest_uncounted_run desc, t.table_id
