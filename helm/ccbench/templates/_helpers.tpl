{{/*
Names, labels, images and the environment shared by ccbench's pods. Every helper is
namespaced `ccbench.`.
*/}}

{{- define "ccbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or the release name alone when it already contains the chart name. */}}
{{- define "ccbench.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's resource name: ccbench.component (dict "root" $ "component" "api"). */}}
{{- define "ccbench.component.fullname" -}}
{{- printf "%s-%s" (include "ccbench.fullname" .root | trunc 50 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "ccbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ccbench.labels" -}}
helm.sh/chart: {{ include "ccbench.chart" . }}
app.kubernetes.io/name: {{ include "ccbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ccbench
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of a component: ccbench.component.labels (dict "root" $ "component" "api"). */}}
{{- define "ccbench.component.labels" -}}
{{ include "ccbench.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selector labels of a component (immutable: never add to them). */}}
{{- define "ccbench.component.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ccbench.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* An image reference: ccbench.image (dict "image" .Values.image.api "root" $). */}}
{{- define "ccbench.image" -}}
{{- $registry := default .image.registry .root.Values.global.imageRegistry -}}
{{- $ref := .image.repository -}}
{{- if $registry -}}{{- $ref = printf "%s/%s" $registry $ref -}}{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $ref .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "ccbench.imagePullSecrets" -}}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "ccbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ccbench.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the Fernet key and the tokens. */}}
{{- define "ccbench.authSecretName" -}}
{{- default (include "ccbench.fullname" .) .Values.auth.existingSecret -}}
{{- end -}}

{{- define "ccbench.databaseSecretName" -}}
{{- default (include "ccbench.fullname" .) .Values.externalDatabase.existingSecret -}}
{{- end -}}

{{- define "ccbench.databaseSecretKey" -}}
{{- if .Values.externalDatabase.existingSecret -}}{{ .Values.externalDatabase.existingSecretUrlKey }}{{- else -}}database-url{{- end -}}
{{- end -}}

{{- define "ccbench.brokerSecretName" -}}
{{- default (include "ccbench.fullname" .) .Values.externalRedis.existingSecret -}}
{{- end -}}

{{- define "ccbench.brokerSecretKey" -}}
{{- if .Values.externalRedis.existingSecret -}}{{ .Values.externalRedis.existingSecretUrlKey }}{{- else -}}broker-url{{- end -}}
{{- end -}}

{{/* A URL's user or password, percent-encoded (urlquery writes a space as "+"). */}}
{{- define "ccbench.urlEscape" -}}
{{- urlquery . | replace "+" "%20" -}}
{{- end -}}

{{/* postgresql+psycopg://user:password@host:port/database[?sslmode=...] */}}
{{- define "ccbench.databaseUrl" -}}
{{- $db := .Values.externalDatabase -}}
{{- $auth := include "ccbench.urlEscape" $db.user -}}
{{- if $db.password -}}{{- $auth = printf "%s:%s" $auth (include "ccbench.urlEscape" $db.password) -}}{{- end -}}
{{- $url := printf "postgresql+psycopg://%s@%s:%v/%s" $auth $db.host $db.port $db.database -}}
{{- if $db.sslmode -}}{{- $url = printf "%s?sslmode=%s" $url $db.sslmode -}}{{- end -}}
{{- $url -}}
{{- end -}}

{{/* redis[s]://[:password@]host:port/database */}}
{{- define "ccbench.brokerUrl" -}}
{{- $r := .Values.externalRedis -}}
{{- $auth := "" -}}
{{- if $r.password -}}{{- $auth = printf ":%s@" (include "ccbench.urlEscape" $r.password) -}}{{- end -}}
{{- printf "%s://%s%s:%v/%v" (ternary "rediss" "redis" $r.tls) $auth $r.host $r.port $r.database -}}
{{- end -}}

{{/* The API's URL inside the cluster (workers upload run artifacts there). */}}
{{- define "ccbench.apiUrl" -}}
{{- if .Values.worker.apiUrl -}}
{{- .Values.worker.apiUrl -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%v" (include "ccbench.component.fullname" (dict "root" . "component" "api")) .Release.Namespace .Values.api.service.port -}}
{{- end -}}
{{- end -}}

{{/*
A generated secret value that survives upgrades: the value given, else the one already in the
cluster's Secret, else a new one. ccbench.secretValue (dict "root" $ "key" "secret-key"
"value" .Values.auth.secretKey "generate" "...").
*/}}
{{- define "ccbench.secretValue" -}}
{{- if .value -}}
{{- .value -}}
{{- else -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (include "ccbench.fullname" .root) -}}
{{- if and $existing (hasKey $existing.data .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- .generate -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Environment of every ccbench container: the database, the broker, the Fernet key. */}}
{{- define "ccbench.commonEnv" -}}
- name: CCBENCH_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ccbench.databaseSecretName" . }}
      key: {{ include "ccbench.databaseSecretKey" . }}
- name: CCBENCH_BROKER_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ccbench.brokerSecretName" . }}
      key: {{ include "ccbench.brokerSecretKey" . }}
- name: CCBENCH_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "ccbench.authSecretName" . }}
      key: secret-key
- name: CCBENCH_STATE_DIR
  value: /var/lib/ccbench
{{- with .Values.extraEnvVars }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ccbench.workerTokenEnv" -}}
- name: CCBENCH_WORKER_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "ccbench.authSecretName" . }}
      key: worker-token
{{- end -}}

{{/* The API image's pod and container security contexts (API, scheduler, migration Job). */}}
{{- define "ccbench.api.podSecurityContext" -}}
{{- if .Values.api.podSecurityContext.enabled }}
securityContext: {{- omit .Values.api.podSecurityContext "enabled" | toYaml | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ccbench.api.containerSecurityContext" -}}
{{- if .Values.api.containerSecurityContext.enabled }}
securityContext: {{- omit .Values.api.containerSecurityContext "enabled" | toYaml | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Checks that fail the rendering with a message instead of deploying something broken. */}}
{{- define "ccbench.validate" -}}
{{- if and (not .Values.externalDatabase.existingSecret) (not .Values.externalDatabase.host) -}}
{{- fail "externalDatabase.host (or externalDatabase.existingSecret) is required: ccbench needs PostgreSQL" -}}
{{- end -}}
{{- if and (not .Values.externalRedis.existingSecret) (not .Values.externalRedis.host) -}}
{{- fail "externalRedis.host (or externalRedis.existingSecret) is required: ccbench needs Redis as its broker" -}}
{{- end -}}
{{- if and .Values.worker.enabled (not .Values.worker.nodeSelector) -}}
{{- fail "worker.nodeSelector must select the experiment nodes: without it a privileged worker would run on every node" -}}
{{- end -}}
{{- if and (gt (int .Values.api.replicaCount) 1) .Values.api.persistence.enabled (not (has "ReadWriteMany" .Values.api.persistence.accessModes)) -}}
{{- fail "api.replicaCount > 1 needs api.persistence.accessModes with ReadWriteMany: every API replica serves the same run artifacts" -}}
{{- end -}}
{{- end -}}
