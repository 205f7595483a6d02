{{/* Names: the release's name when it says gpufleet, else <release>-gpufleet. */}}
{{- define "gpufleet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpufleet.scheduler.fullname" -}}
{{- printf "%s-scheduler" (include "gpufleet.fullname" .) -}}
{{- end -}}

{{- define "gpufleet.deviceplugin.fullname" -}}
{{- printf "%s-deviceplugin" (include "gpufleet.fullname" .) -}}
{{- end -}}

{{- define "gpufleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include with (list . "scheduler"). */}}
{{- define "gpufleet.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "gpufleet.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* kube-scheduler no newer than the API server: by default the cluster's own release. */}}
{{- define "gpufleet.scheduler.image" -}}
{{- $tag := .Values.scheduler.image.tag | default (regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- printf "%s:%s" .Values.scheduler.image.repository $tag -}}
{{- end -}}

{{/* The ServiceAccount kube-scheduler and the extender share (one pod). */}}
{{- define "gpufleet.scheduler.user" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "gpufleet.scheduler.fullname" .) -}}
{{- end -}}

{{- define "gpufleet.deviceplugin.resourceName" -}}
{{- $s := .Values.devicePlugin.sharing -}}
{{- $s.resourceName | default (ternary "aliyun.com/gpu-mem" "nvidia.com/gpu" (eq $s.mode "shared")) -}}
{{- end -}}

{{- define "gpufleet.extender.url" -}}
{{- printf "%s://127.0.0.1:%v%s" (ternary "https" "http" .Values.extender.tls.enabled) .Values.extender.port .Values.extender.prefix -}}
{{- end -}}
