-- name: pack_custody
-- description: What happened to one pack: shuffle, riffle, cut, cutting card, load, burn, every round, cutting card surfacing, last coup, stub count and discard, emptying, with its findings, in time order, then a summary row (its findings: the ones listed); dealers by name from seeds_dealers.
-- param table_id: string  the table, e.g. BAC-01
-- param pack_id: string  the pack, e.g. P-BAC01-01
-- example: pitwatch query pack_custody --lake lake --param table_id=BAC-01 --param pack_id=P-BAC01-01

with

table_events as (
    select * from events
    where table_id = $table_id
),

pack_rounds as (
    select * from rounds
    where table_id = $table_id and pack_id = $pack_id
),

pack_row as (
    select * from packs
    where table_id = $table_id and pack_id = $pack_id
),

pack_findings as (
    select * from findings
    where table_id = $table_id and pack_id = $pack_id
),

-- a terminal event that names no pack: preparation (riffle, cut, cutting card, burn) belongs to
-- the next pack the terminal names; the end of a pack (last coup, stub) to the one it named last
dealer_events as (
    select
        *,
        coalesce(pack_id, first_value(pack_id ignore nulls) over following_events) as next_pack_id,
        coalesce(pack_id, last_value(pack_id ignore nulls) over preceding_events) as previous_pack_id
    from table_events
    where source = 'dealer'
    window
        following_events as (partition by device_id order by seq rows between current row and unbounded following),
        preceding_events as (partition by device_id order by seq rows between unbounded preceding and current row)
),

round_cards as (
    select round_id, count(*) as cards
    from table_events
    where type = 'card_dealt' and round_id in (select round_id from pack_rounds)
    group by round_id
),

shuffler_steps as (
    select
        ts, 1 as stage_order, 'shuffle' as stage, source, device_id, seq, type, round_id, dealer_id,
        concat(decks, case when decks = 1 then ' deck' else ' decks' end, ', ', card_count, case when card_count = 1 then ' card counted' else ' cards counted' end,
               case when len(missing) > 0 then concat(', missing ', array_to_string(missing, ' ')) end,
               case when len(extra) > 0 then concat(', extra ', array_to_string(extra, ' ')) end,
               case when preshuffled then ', pre-shuffled' end) as detail
    from table_events
    where source = 'shuffler' and pack_id = $pack_id
),

shoe_steps as (
    select
        ts,
        case type when 'shoe_loaded' then 5 when 'cut_card_drawn' then 7 else 10 end as stage_order,
        case type when 'shoe_loaded' then 'load' when 'cut_card_drawn' then 'cutting card surfaced'
                  else 'emptied' end as stage,
        source, device_id, seq, type, round_id, dealer_id,
        case type
            when 'shoe_loaded' then concat(card_count, case when card_count = 1 then ' card loaded' else ' cards loaded' end)
            when 'cut_card_drawn' then concat('after ', "index", case when "index" = 1 then ' card drawn' else ' cards drawn' end)
            else concat(remaining, case when remaining = 1 then ' card left in the shoe' else ' cards left in the shoe' end)
        end as detail
    from table_events
    where source = 'shoe' and pack_id = $pack_id
      and type in ('shoe_loaded', 'cut_card_drawn', 'shoe_emptied')
),

preparation_steps as (
    select
        ts,
        case when type in ('shuffle', 'reshuffle') then 1 when type = 'riffle_requested' then 2
             when type in ('cut_offered', 'cut_refused', 'cut') then 3 when type = 'cut_card_inserted' then 4
             else 6 end as stage_order,
        case when type in ('shuffle', 'reshuffle') then 'shuffle' when type = 'riffle_requested' then 'riffle'
             when type in ('cut_offered', 'cut_refused', 'cut') then 'cut'
             when type = 'cut_card_inserted' then 'cutting card' else 'burn' end as stage,
        source, device_id, seq, type, round_id, dealer_id,
        case type
            when 'shuffle' then concat('shuffled by ', method)
            when 'reshuffle' then concat('reshuffled in round ', round_id, ': ',
                                         card_count, case when card_count = 1 then ' card, ' else ' cards, ' end,
                                         burns_added, case when burns_added = 1 then ' burn added' else ' burns added' end)
            when 'riffle_requested' then concat('riffle asked by ', "by")
            when 'cut_offered' then concat('offered to ', "to")
            when 'cut_refused' then concat('refused by ', "by")
            when 'cut' then concat('cut by ', "by", ' at ', position, ' of ', stack_size)
            when 'cut_card_inserted' then concat(from_back, case when from_back = 1 then ' card' else ' cards' end,
                                                 ' from the back of ', stack_size)
            else concat('burn ', coalesce(card, '(unknown)'), ' face ', face)
        end as detail
    from dealer_events
    where (type in ('shuffle', 'reshuffle') and pack_id = $pack_id)
       or (type in ('riffle_requested', 'cut_offered', 'cut_refused', 'cut', 'cut_card_inserted')
           and next_pack_id = $pack_id)
       or (type = 'card_dealt' and target = 'burn' and round_id is null and next_pack_id = $pack_id)
),

end_of_pack_steps as (
    select
        ts,
        case type when 'last_coup_announced' then 8 else 9 end as stage_order,
        case type when 'last_coup_announced' then 'last coup' else 'stub' end as stage,
        source, device_id, seq, type, round_id, dealer_id,
        case type
            when 'last_coup_announced' then 'last coup announced'
            when 'stub_counted' then concat('stub ', stub, ' + layout ', layout, ' = ', stub + layout)
            else concat('stub discarded', case when exposed then ', exposed' end)
        end as detail
    from dealer_events
    where (type = 'last_coup_announced' and previous_pack_id = $pack_id)
       or (type in ('stub_counted', 'stub_discarded')
           and (pack_id = $pack_id
                or round_id in (select round_id from pack_rounds)
                or (pack_id is null and round_id is null and previous_pack_id = $pack_id)))
),

round_steps as (
    select
        coalesce(r.started, r.ended) as ts, 6 as stage_order, 'round' as stage,
        'dealer' as source, null as device_id, null as seq, 'round' as type, r.round_id, r.dealer_id,
        concat(coalesce(r.outcome, 'no outcome'), ', ', coalesce(c.cards, 0), case when coalesce(c.cards, 0) = 1 then ' card dealt' else ' cards dealt' end,
               case when r.voided then ', voided' end, ', ', r.findings, case when r.findings = 1 then ' finding' else ' findings' end) as detail
    from pack_rounds as r
    left join round_cards as c using (round_id)
),

finding_steps as (
    select
        f.ts, 11 as stage_order, 'finding' as stage,
        'pitwatch' as source, f.device_id, null as seq, f.rule_id as type, f.round_id, f.dealer_id,
        concat(f.severity, ': ', f.actual, ' (expected ', f.expected, '; ', f.source, ')') as detail
    from pack_findings as f
),

summary_step as (
    select
        null::timestamptz as ts, 12 as stage_order, 'summary' as stage,
        'pitwatch' as source, null as device_id, null as seq, 'pack' as type, null as round_id, null as dealer_id,
        concat(game, ', ', decks, case when decks = 1 then ' deck' else ' decks' end, ': ', cards_drawn, case when cards_drawn = 1 then ' card drawn' else ' cards drawn' end, ', ',
               rounds_played, case when rounds_played = 1 then ' round' else ' rounds' end, ', stub counts [',
               array_to_string(stub_counts, ', '), '], stub left ', coalesce(stub_remaining::varchar, '?'),
               ', ', listed.findings, case when listed.findings = 1 then ' finding' else ' findings' end) as detail
    -- the findings listed above (of the pack and of its rounds), not packs.findings (the pack's own)
    from pack_row, (select count(*) as findings from pack_findings) as listed
),

steps as (
    select * from shuffler_steps
    union all by name select * from shoe_steps
    union all by name select * from preparation_steps
    union all by name select * from end_of_pack_steps
    union all by name select * from round_steps
    union all by name select * from finding_steps
    union all by name select * from summary_step
)

select s.ts, s.stage, s.source, s.device_id, s.seq, s.type, s.round_id, s.dealer_id, d.name as dealer_name, s.detail
from steps as s
left join seeds_dealers as d on d.id = s.dealer_id
order by s.ts nulls last, s.stage_order, s.device_id, s.seq
