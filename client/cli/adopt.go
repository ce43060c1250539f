package cli

// foundOnHost ends the help of the commands that take one job
// (forOneJob).
const foundOnHost = `

A job this store has no record of (submitted from another machine or with
another XDG_DATA_HOME; xrun ps lists it from its container) is looked for on
--host (default: DOCKER_HOST, then the docker context) and recorded in this
store.`
