-- name: round_replay
-- description: One round replayed for a dispute: every event of both streams (the dealer terminal's events of the round, and the shoe's draws of the round's pack at the places of the round's cards) in time order, with the findings that cite each event beside it; findings of the round that cite none of them come last.
-- param table_id: string  the table, e.g. BAC-01
-- param round_id: string  the round (hand, coup), e.g. BAC-01-0054
-- example: pitwatch query round_replay --lake lake --param table_id=BAC-01 --param round_id=BAC-01-0054

with

table_events as (
    select * from events
    where table_id = $table_id
),

the_round as (
    select * from rounds
    where table_id = $table_id and round_id = $round_id
),

table_findings as (
    select * from findings
    where table_id = $table_id
),

table_rounds as (
    select round_id, pack_id from rounds
    where table_id = $table_id
),

-- the terminal's cards in recorded order; a card names its pack, else its round's pack,
-- else (a burn outside rounds) the next pack the terminal names
dealer_cards as (
    select
        e.event_id,
        e.round_id,
        e.device_id,
        e.seq,
        coalesce(e.pack_id, r.pack_id,
                 first_value(coalesce(e.pack_id, r.pack_id) ignore nulls) over (
                     partition by e.device_id order by e.seq rows between current row and unbounded following)
        ) as card_pack_id
    from table_events as e
    left join table_rounds as r on r.round_id = e.round_id
    where e.source = 'dealer' and e.type = 'card_dealt'
),

-- each terminal card's place in its pack: the shoe's draw index it should match
placed_cards as (
    select *, row_number() over (partition by card_pack_id order by seq, event_id) as place
    from dealer_cards
    where card_pack_id = (select pack_id from the_round)
),

round_places as (
    select min(place) as first_place, max(place) as last_place
    from placed_cards
    where round_id = $round_id
),

-- the round's draws run from its first place up to the place before the next round's first card
shoe_range as (
    select
        first_place,
        coalesce((select min(place) - 1 from placed_cards as p
                  where p.place > round_places.last_place and p.round_id is distinct from $round_id),
                 9223372036854775807) as last_place
    from round_places
),

dealer_span as (
    select device_id, min(seq) as first_seq, max(seq) as last_seq
    from table_events
    where source = 'dealer' and round_id = $round_id
    group by device_id
),

dealer_stream as (
    select e.*, p.place
    from table_events as e
    join dealer_span as s on e.device_id = s.device_id and e.seq between s.first_seq and s.last_seq
    left join placed_cards as p on p.device_id = e.device_id and p.event_id = e.event_id
    where e.source = 'dealer' and (e.round_id = $round_id or e.round_id is null)
),

shoe_stream as (
    select e.*, e."index" as place
    from table_events as e, shoe_range as r
    where e.source = 'shoe'
      and e.pack_id = (select pack_id from the_round)
      and ((e.type = 'card_drawn' and e."index" between r.first_place and r.last_place)
           or (e.type = 'cut_card_drawn' and e."index" + 1 between r.first_place and r.last_place))
),

both_streams as (
    select * from dealer_stream
    union all by name
    select * from shoe_stream
),

cited as (
    select
        unnest(evidence).device_id as device_id,
        unnest(evidence).event_id as event_id,
        finding_id,
        concat(rule_id, ' (', severity, ')') as finding
    from table_findings
),

findings_per_event as (
    select device_id, event_id, list(finding order by finding) as findings
    from cited
    where (device_id, event_id) in (select (device_id, event_id) from both_streams)
    group by device_id, event_id
),

event_rows as (
    select
        e.ts,
        e.source,
        e.device_id,
        e.seq,
        e.type,
        e.place,
        e.target,
        e.face,
        e.card,
        e.seat,
        e.spot,
        e.action,
        e.amount,
        e.result,
        nullif(concat_ws(', ',
                  case when e.hand is not null then concat('hand ', e.hand) end,
                  case when e.street is not null then concat('street ', e.street) end,
                  case when e.all_in then 'all in' end,
                  case when e.stub is not null then concat('stub ', e.stub, ', layout ', e.layout) end,
                  case when e.exposed then 'exposed' end,
                  case when e.type = 'cut_card_drawn' then concat('after ', e."index", case when e."index" = 1 then ' card' else ' cards' end) end,
                  e.reason), '') as detail,
        coalesce(f.findings, []) as findings,
        0 as row_kind
    from both_streams as e
    left join findings_per_event as f using (device_id, event_id)
),

uncited_findings as (
    select
        ts, 'pitwatch' as source, device_id, null as seq, rule_id as type, null as place, null as target,
        null as face, null as card, seat, spot, null as action, null as amount, null as result,
        concat(actual, ' (expected ', expected, ')') as detail,
        [concat(rule_id, ' (', severity, ')')] as findings,
        1 as row_kind
    from table_findings
    where round_id = $round_id
      and finding_id not in (select finding_id from cited
                             where (device_id, event_id) in (select (device_id, event_id) from both_streams))
)

select ts, source, device_id, seq, type, place, target, face, card, seat, spot, action, amount, result, detail, findings
from (
    select * from event_rows
    union all by name
    select * from uncited_findings
)
order by row_kind, ts, device_id, seq
