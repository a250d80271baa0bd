-- name: cut_placement
-- description: Distribution of baccarat cut positions (003 4.5: 52 to stack size - 52) and cutting-card placements (003 4.6: at least 20 from the back) over a range of gaming days, in buckets, with how many packs in each bucket broke the procedure.
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- param bucket: int[1..1000] = 20  width of a bucket, in cards (1 to 1000)
-- example: pitwatch query cut_placement --lake lake --param from_day=2026-11-01 --param to_day=2026-11-30 --param bucket=52

with

packs_in_range as (
    select * from packs
    where gaming_day between $from_day and $to_day
),

placements as (
    select
        'cut_position' as measure,
        cut_position as cards,
        cut_position < 52 or cut_position > cut_stack_size - 52 as outside_procedure
    from packs_in_range
    where cut_position is not null
    union all
    select
        'cut_card_from_back' as measure,
        cut_card_from_back as cards,
        cut_card_from_back < 20 as outside_procedure
    from packs_in_range
    where cut_card_from_back is not null
),

bucketed as (
    select
        measure,
        (cards // $bucket) * $bucket as bucket_from,
        (cards // $bucket) * $bucket + $bucket - 1 as bucket_to,
        outside_procedure
    from placements
)

select
    measure,
    bucket_from,
    bucket_to,
    count(*) as packs,
    count(*) filter (where outside_procedure) as outside_procedure,
    round(100.0 * count(*) / sum(count(*)) over (partition by measure), 1)::double as pct_of_packs
from bucketed
group by measure, bucket_from, bucket_to
order by measure desc, bucket_from
