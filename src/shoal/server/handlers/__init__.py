"""One module per Kafka API. Each registers itself with `@api(key, min, max)` and is:
decode (done by the connection), validate with early error returns, call one core
method, encode a kio response. What several handlers share (and no API owns) is in
`common/`."""
