#!/usr/bin/env bash
# The project's own S3-compatible object store: SeaweedFS (`weed server`, built by scripts/setup.sh) on
# 127.0.0.1 only, for the S3 evidence store and Pulumi's DIY S3 state backend. Usage:
#   bash scripts/object-store.sh start    start it (if it is not answering already) and wait until it takes writes
#   bash scripts/object-store.sh status   exit 0 if and only if its S3 port answers
#   bash scripts/object-store.sh stop     stop it: SIGTERM, then SIGKILL after STOP_TIMEOUT_S
#   bash scripts/object-store.sh env      its credentials as export lines: eval "$(bash scripts/object-store.sh env)"
#   bash scripts/object-store.sh bucket <name>   create a bucket (one that exists already is fine)
# Everything lives in .tools/object-store/ (ignored by git): data/, weed.log (the previous run's in weed.log.1),
# pid, credentials, s3.json.
#
# Ports, all bound to 127.0.0.1 and counted from the S3 port P (NARWHAL_OBJECT_STORE_PORT, default 8333):
#   P S3 API, P+1 master, P+2 volume server, P+3 filer; their gRPC ports are each plus 10000 (SeaweedFS's
#   own rule, made explicit here). By default 8333-8336 and 18333-18336: clear of the ports people run
#   things on (8080, 8888, 9000, 9090, 9333), SeaweedFS's own defaults among them. The Iceberg (8181) and
#   Lance (9101) catalogs SeaweedFS starts beside S3 are switched off. SeaweedFS also makes Unix sockets
#   named by those ports in /tmp (/tmp/seaweedfs-<service>-grpc-<port>.sock, and the S3 and filer ones).
#
# S3 authentication is on: the first start generates an access key id and secret into credentials (mode
# 0600) and grants that one identity Admin, Read, Write, List and Tagging in s3.json. The master, volume and
# filer ports carry no authentication of their own (the filer's HTTP API is switched off, since S3 reaches
# the filer over gRPC); they are reachable from this machine only.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$NARWHAL_ROOT"

# NARWHAL_OBJECT_STORE_DIR: another store of the same kind elsewhere (the tests start one of their own).
DIR="${NARWHAL_OBJECT_STORE_DIR:-$NARWHAL_ROOT/.tools/object-store}"
WEED="$NARWHAL_ROOT/.tools/bin/weed"
LOG="$DIR/weed.log"
PID_FILE="$DIR/pid"
CREDENTIALS="$DIR/credentials"
IDENTITIES="$DIR/s3.json"
REGION=us-east-1
PORT="${NARWHAL_OBJECT_STORE_PORT:-8333}"
ENDPOINT="http://127.0.0.1:$PORT"
# Bounds, each named where it is waited out. The S3 port opens 2-6 s after start on an idle machine; the
# first write succeeds some 8-10 s after that (the filer joins the master's lock ring only after its own
# membership check); 60 s each leaves a loaded machine room.
PORT_TIMEOUT_S=60
WRITE_TIMEOUT_S=60
# A graceful stop takes under a second, or 15 s when the filer's last metadata-log flush finds the volume
# server already gone (SeaweedFS's shutdownMetadataLogFlushBudget); 30 s covers both.
STOP_TIMEOUT_S=30

usage() { echo "usage: scripts/object-store.sh start|stop|status|env|bucket <name>" >&2; exit 2; }
[ "$#" -eq 1 ] || { [ "$#" -eq 2 ] && [ "$1" = bucket ]; } || usage
case "$PORT" in '' | *[!0-9]*) echo "scripts/object-store.sh: NARWHAL_OBJECT_STORE_PORT must be a port number, not '$PORT'" >&2; exit 2 ;; esac
if [ "$PORT" -lt 1024 ] || [ "$PORT" -gt 55532 ]; then
  echo "scripts/object-store.sh: NARWHAL_OBJECT_STORE_PORT=$PORT: the store uses P to P+3 and P+10000 to P+10003, so P must be 1024-55532" >&2
  exit 2
fi

# The HTTP status the S3 port answers an unsigned GET / with (403 while authentication is on), or 000.
s3_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$ENDPOINT/" 2>/dev/null || true; }
answers() { local code; code=$(s3_status); [ "$code" != 000 ] && [ "$code" -lt 500 ]; }
# Our weed's pid, from the pid file, if that process is alive and is weed serving this data directory.
running_pid() {
  local pid
  pid=$(cat "$PID_FILE" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" in *" -dir=$DIR/data "*) echo "$pid" ;; *) return 1 ;; esac
}
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
log_tail() { echo "--- last 40 lines of $LOG ---" >&2; tail -n 40 "$LOG" >&2 2>/dev/null || true; }

# One signed S3 request; prints the HTTP status (000 when there was no answer within `max_s` seconds).
# The secret goes to curl on stdin, never on a command line other users can read in ps.
signed() {
  local method=$1 path=$2 max_s=$3
  shift 3
  printf 'user = "%s:%s"\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" |
    curl -K - -s -o /dev/null -w '%{http_code}' --max-time "$max_s" --aws-sigv4 "aws:amz:$REGION:s3" \
      -X "$method" "$@" "$ENDPOINT$path" 2>/dev/null || true
}

# The access key id and secret, generated on the first start and kept across restarts; the endpoint line
# follows NARWHAL_OBJECT_STORE_PORT. od reads exactly the bytes it needs, so no pipe is cut short under
# pipefail.
write_credentials() {
  local id secret
  if [ -f "$CREDENTIALS" ]; then
    id=$(sed -n 's/^export AWS_ACCESS_KEY_ID=//p' "$CREDENTIALS")
    secret=$(sed -n 's/^export AWS_SECRET_ACCESS_KEY=//p' "$CREDENTIALS")
  else
    id="NW$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)"
    secret=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
  fi
  [ -n "$id" ] && [ -n "$secret" ] || { echo "scripts/object-store.sh: $CREDENTIALS has no key id or secret; remove it to generate new ones" >&2; exit 1; }
  (
    umask 077
    {
      echo "# The S3 credentials of this checkout's object store (scripts/object-store.sh), made on its first start."
      echo "export AWS_ACCESS_KEY_ID=$id"
      echo "export AWS_SECRET_ACCESS_KEY=$secret"
      echo "export AWS_REGION=$REGION"
      echo "export NARWHAL_OBJECT_STORE_ENDPOINT=$ENDPOINT"
      # The CLI's S3 backend (AWS SDK for Go v2) checks response checksums SeaweedFS does not send, and warns
      # "Response has no supported checksum" on every state read; it then checks only where a request asks.
      echo "export AWS_RESPONSE_CHECKSUM_VALIDATION=when_required"
    } >"$CREDENTIALS.new"
    # SeaweedFS's identities file (-s3.config; format in weed/command/s3.go and weed/s3api/auth_credentials.go).
    printf '{"identities":[{"name":"narwhal","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}\n' \
      "$id" "$secret" >"$IDENTITIES.new"
  )
  mv "$CREDENTIALS.new" "$CREDENTIALS"
  mv "$IDENTITIES.new" "$IDENTITIES"
}

stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((STOP_TIMEOUT_S * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    # setsid made weed the leader of its own process group: the group is weed and nothing else of ours.
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    echo "weed (pid $pid) did not stop within STOP_TIMEOUT_S=$STOP_TIMEOUT_S s of SIGTERM; killed it" >&2
  fi
  rm -f "$PID_FILE"
}

start() {
  [ -x "$WEED" ] || { echo "scripts/object-store.sh: $WEED is missing: run npm run setup" >&2; exit 1; }
  local pid
  pid=$(running_pid || true)
  if [ -n "$pid" ] && answers; then
    echo "already answering on $ENDPOINT (pid $pid)"
    return 0
  fi
  if [ -z "$pid" ]; then
    for p in "$PORT" $((PORT + 1)) $((PORT + 2)) $((PORT + 3)) $((PORT + 10000)) $((PORT + 10001)) $((PORT + 10002)) $((PORT + 10003)); do
      if port_taken "$p"; then
        echo "scripts/object-store.sh: port $p on 127.0.0.1 is taken by another program; set NARWHAL_OBJECT_STORE_PORT to move the store's ports (P to P+3, P+10000 to P+10003)" >&2
        exit 1
      fi
    done
    # SeaweedFS's master keeps the volumes' state in a folder named by its port (m<port>, master.go): data
    # made on one port cannot take writes from a master on another ("volume growth is frozen after master
    # state loss"). The port the data was made with is kept beside it, and another is refused.
    if [ -f "$DIR/port" ] && [ "$(cat "$DIR/port")" != "$PORT" ]; then
      echo "scripts/object-store.sh: the store's data in $DIR/data was made on port $(cat "$DIR/port"), and SeaweedFS keeps its volumes' state per port; start it with NARWHAL_OBJECT_STORE_PORT=$(cat "$DIR/port"), or move $DIR aside to start afresh on $PORT" >&2
      exit 1
    fi
    mkdir -p "$DIR/data"
    echo "$PORT" >"$DIR/port"
    write_credentials
    # env -u: SeaweedFS adds an admin identity for whatever AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY it
    # inherits, config file or not (loadEnvironmentVariableCredentials): the caller's keys must not become
    # keys to this store. WEED_MASTER_VOLUME_GROWTH_COPY_1=1 (master.toml's volume_growth.copy_1, read from
    # the environment): every bucket is a collection of its own, and SeaweedFS grows 7 volumes for each by
    # default; one each, grown as it fills, keeps a few buckets inside -volume.max.
    # WEED_MASTER_VOLUME_GROWTH_STATE_LOSS_RECOVERY_WAIT=10s: a master that finds its volume server
    # reporting another cluster's topology id (its Raft state was rebuilt, as after a stop it did not
    # finish) freezes volume growth until an operator runs `volume.growth.resume`, and no new bucket takes
    # a write. This store's one volume server reports every volume it holds within a heartbeat, so 10 s
    # after the freeze growth resumes by itself, as SeaweedFS lets a master be told to. Run from $DIR, so
    # no stray *.toml in the caller's folder configures it.
    #   -logtostderr              glog writes to weed.log only, not a new set of files in /tmp per start
    #   -ip, -ip.bind 127.0.0.1   every listener on loopback only, none on the host's other addresses
    #   -master.peers=none        a single master: no Raft election on restart (otherwise 10-20 s of
    #                             "Not current leader" before the first write)
    #   -master.volumeSizeLimitMB=64, -volume.max=64   small volumes, at most 4 GiB in all; the default
    #                             30 GB volumes are for clusters, not a checkout's evidence and state
    #   -volume.preStopSeconds=0  no 10 s pause on stop: no other server reads from this one
    #   -master.telemetry=false   no usage report to telemetry.seaweedfs.com
    #   -filer.disableHttp        the filer's HTTP API would read and write every bucket without S3's auth
    #   -s3.iam=false             no IAM API on the S3 port: the one identity is fixed in s3.json
    if [ -f "$LOG" ]; then mv "$LOG" "$LOG.1"; fi
    (cd "$DIR"
      env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN WEED_MASTER_VOLUME_GROWTH_COPY_1=1 \
        WEED_MASTER_VOLUME_GROWTH_STATE_LOSS_RECOVERY_WAIT=10s \
      setsid nohup "$WEED" -logtostderr server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$DIR/data" \
        -master.port=$((PORT + 1)) -master.port.grpc=$((PORT + 10001)) -master.peers=none \
        -master.volumeSizeLimitMB=64 -master.telemetry=false \
        -volume.port=$((PORT + 2)) -volume.port.grpc=$((PORT + 10002)) -volume.max=64 -volume.preStopSeconds=0 \
        -filer.port=$((PORT + 3)) -filer.port.grpc=$((PORT + 10003)) -filer.disableHttp=true \
        -s3 -s3.port="$PORT" -s3.port.grpc=$((PORT + 10000)) -s3.port.iceberg=0 -s3.port.lance=0 -s3.iam=false \
        -s3.config="$IDENTITIES" \
        >"$LOG" 2>&1 </dev/null &
      echo $! >"$PID_FILE")
    pid=$(cat "$PID_FILE")
  fi

  local deadline=$((SECONDS + PORT_TIMEOUT_S))
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "scripts/object-store.sh: weed (pid $pid) exited before its S3 port answered" >&2
      log_tail; rm -f "$PID_FILE"; exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "scripts/object-store.sh: the S3 port $ENDPOINT did not answer within PORT_TIMEOUT_S=$PORT_TIMEOUT_S s; stopping weed (pid $pid)" >&2
      log_tail; stop_pid "$pid"; exit 1
    fi
    sleep 0.2
  done

  # The S3 port opens once the gateway has read the filer's configuration, but a write then still waits
  # for the filer to join the master's lock ring (weed/cluster/lock_client.go), and fails with a 500 if
  # that takes over 15 s. Started means a write went through: a probe bucket of its own, written to and
  # removed with its volume, so the store holds nothing it did not hold before.
  # shellcheck disable=SC1090
  . "$CREDENTIALS"
  local probe step code=000
  probe="narwhal-readiness-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
  deadline=$((SECONDS + WRITE_TIMEOUT_S))
  for step in "PUT /$probe" "PUT /$probe/probe" "DELETE /$probe/probe" "DELETE /$probe"; do
    while :; do
      local left=$((deadline - SECONDS))
      if [ "$left" -le 0 ]; then
        echo "scripts/object-store.sh: a signed write did not go through within WRITE_TIMEOUT_S=$WRITE_TIMEOUT_S s ($step answered $code); stopping weed (pid $pid)" >&2
        log_tail; stop_pid "$pid"; exit 1
      fi
      if [ "$step" = "PUT /$probe/probe" ]; then
        # curl (7.88) signs a body in a way SeaweedFS refuses (SignatureDoesNotMatch); with the payload
        # declared UNSIGNED-PAYLOAD, a header curl then signs, the write goes through.
        code=$(signed PUT "/$probe/probe" "$left" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --data-binary probe)
      else
        code=$(signed "${step%% *}" "${step#* }" "$left")
      fi
      case "$code" in 2??) break ;; 000 | 5??) sleep 0.5 ;; *)
        echo "scripts/object-store.sh: the readiness probe's $step was refused with HTTP $code: are $CREDENTIALS and $IDENTITIES out of step?" >&2
        log_tail; stop_pid "$pid"; exit 1 ;;
      esac
    done
  done
  echo "answering on $ENDPOINT (pid $pid; log: ${LOG#"$NARWHAL_ROOT"/})"
}

case "$1" in
  start) start ;;
  status)
    pid=$(running_pid || true)
    if answers; then
      echo "answering on $ENDPOINT${pid:+ (pid $pid)}"
    else
      echo "not answering on $ENDPOINT${pid:+ (weed pid $pid is running)}"
      exit 1
    fi ;;
  stop)
    pid=$(running_pid || true)
    if [ -z "$pid" ]; then
      rm -f "$PID_FILE"
      echo "not running"
    else
      stop_pid "$pid"
      echo "stopped (was pid $pid)"
    fi ;;
  env)
    [ -f "$CREDENTIALS" ] || { echo "scripts/object-store.sh: no $CREDENTIALS yet: run bash scripts/object-store.sh start" >&2; exit 1; }
    grep '^export ' "$CREDENTIALS" ;;
  bucket)
    # S3's own naming rule, checked here so a refusal names the rule rather than an HTTP status.
    [[ "$2" =~ ^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$ ]] || { echo "scripts/object-store.sh: bucket name '$2': use 3-63 lowercase letters, digits, '.' or '-'" >&2; exit 2; }
    [ -f "$CREDENTIALS" ] || { echo "scripts/object-store.sh: no $CREDENTIALS yet: run bash scripts/object-store.sh start" >&2; exit 1; }
    # shellcheck disable=SC1090
    . "$CREDENTIALS"
    # 409 is BucketAlreadyOwnedByYou: with one identity, a bucket that exists is this store's own.
    code=$(signed PUT "/$2" 30)
    case "$code" in
      200) echo "created bucket $2 on $ENDPOINT" ;;
      409) echo "bucket $2 exists on $ENDPOINT" ;;
      000) echo "scripts/object-store.sh: $ENDPOINT did not answer within 30 s: bash scripts/object-store.sh start" >&2; exit 1 ;;
      *) echo "scripts/object-store.sh: creating bucket $2 was refused with HTTP $code" >&2; exit 1 ;;
    esac ;;
  *) usage ;;
esac
