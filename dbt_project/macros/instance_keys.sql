{#
  Instance-type normalisation for the power-profile seeds (documented in seeds/README.md).

  instance_profile_key(provider, instance_type) -> the key of seeds power_instance_profiles.instance_key
  and gpu_instance_map.instance_key (both lower-case CCF keys):
    aws   : lower(type)                                   m5.large        -> m5.large   (CCF keys AWS per type)
    gcp   : lower(type) for CCF's shared-core types        e2-medium       -> e2-medium  (CCF: Unknown -> no row
            (e2-micro, e2-small, e2-medium, f1-micro,                                     -> provider average)
            g1-small), else the machine family             n2-standard-4   -> n2
            = part before the first '-'                    n2-custom-4-8192 -> n2
    azure : drop a 'Standard_'/'Basic_' prefix, '_' -> ' ', lower
                                                           Standard_D2s_v3 -> d2s v3     (CCF 'D2s v3')
                                                           Standard_NC4as_T4_v3 -> nc4as t4 v3
    other : lower(type)
  No row for the key = no CCF profile -> power_provider_averages (flagged by the model).

  boavizta_instance_key(provider, instance_type) -> boavizta_instances.instance_type (lower-case):
    azure : drop the 'Standard_'/'Basic_' prefix, keep '_', lower   Standard_D2ads_v5 -> d2ads_v5
    other : lower(type)

  Portable SQL only: lower, trim, replace, substr, case and dbt.split_part.
#}

{% macro _strip_azure_size_prefix(type_expr) -%}
    case
        when substr({{ type_expr }}, 1, 9) = 'standard_' then substr({{ type_expr }}, 10)
        when substr({{ type_expr }}, 1, 6) = 'basic_' then substr({{ type_expr }}, 7)
        else {{ type_expr }}
    end
{%- endmacro %}

{% macro instance_profile_key(provider_col, instance_type_col) -%}
    {%- set t = "lower(trim(" ~ instance_type_col ~ "))" -%}
    case lower(trim({{ provider_col }}))
        when 'aws' then {{ t }}
        when 'gcp' then
            case
                when {{ t }} in ('e2-micro', 'e2-small', 'e2-medium', 'f1-micro', 'g1-small') then {{ t }}
                else {{ dbt.split_part(t, "'-'", 1) }}
            end
        when 'azure' then replace({{ _strip_azure_size_prefix(t) }}, '_', ' ')
        else {{ t }}
    end
{%- endmacro %}

{% macro boavizta_instance_key(provider_col, instance_type_col) -%}
    {%- set t = "lower(trim(" ~ instance_type_col ~ "))" -%}
    case lower(trim({{ provider_col }}))
        when 'azure' then {{ _strip_azure_size_prefix(t) }}
        else {{ t }}
    end
{%- endmacro %}
