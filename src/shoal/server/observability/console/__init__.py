"""The web console: pages of topics, share groups (with the live in-flight window) and
consumer groups, served on the broker's HTTP listener. Read-only unless
`console.allow.writes=true`.

    routes.py   `Console`: the routes under /console, the server-sent events of a
                share group, the write endpoints' checks, the chart sampler lifespan
    views.py    what the pages show, read from the services (JSON-ready data)
    actions.py  reset offsets, delete a group, through the group coordinator's
                administration operations
    history.py  the last hour of chart samples (ring buffer) and the sampler loop
    static/     index.html, console.js, console.css (package data; no build step)
"""
