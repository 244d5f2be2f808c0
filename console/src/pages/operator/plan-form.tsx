/** A customer's plan as form fields (create a customer, change its plan): mainnets, the cap on active subscriptions, requests per second. */
import { Field } from '../../ui.tsx';

export interface PlanForm {
  mainnetAllowed: boolean;
  /** '' for no cap (or, at create, the default). */
  maxActiveSubscriptions: string;
  requestsPerSecond: string;
}

/** A whole number as JSON holds it exactly; otherwise the text as typed, for the API to refuse with its message. */
export function wholeNumber(text: string): number | string {
  const t = text.trim();
  return /^\d+$/.test(t) && Number.isSafeInteger(Number(t)) ? Number(t) : t;
}

/** The form as the API's plan fields: numbers where typed as whole numbers, the text as typed otherwise (for the API to refuse with its message). */
export function planBody(plan: PlanForm, options: { blankIsDefault: boolean }): Record<string, unknown> {
  const number = wholeNumber;
  const body: Record<string, unknown> = { mainnetAllowed: plan.mainnetAllowed };
  if (plan.maxActiveSubscriptions.trim()) body.maxActiveSubscriptions = number(plan.maxActiveSubscriptions);
  else if (!options.blankIsDefault) body.maxActiveSubscriptions = null;
  if (plan.requestsPerSecond.trim()) body.requestsPerSecond = number(plan.requestsPerSecond);
  return body;
}

export function planForm(plan: Record<string, unknown>): PlanForm {
  return {
    mainnetAllowed: plan.mainnetAllowed !== false,
    maxActiveSubscriptions: plan.maxActiveSubscriptions === null || plan.maxActiveSubscriptions === undefined ? '' : String(plan.maxActiveSubscriptions),
    requestsPerSecond: plan.requestsPerSecond === undefined ? '' : String(plan.requestsPerSecond),
  };
}

export function PlanFields(props: { id: string; plan: PlanForm; onChange: (plan: PlanForm) => void; errors: Record<string, string>; creating: boolean }) {
  const defaultHint = "blank: the configuration's default";
  const { id, plan, onChange, errors } = props;
  return (
    <>
      <div class="field inline">
        <input
          id={`${id}-mainnet`}
          type="checkbox"
          checked={plan.mainnetAllowed}
          onChange={(e) => onChange({ ...plan, mainnetAllowed: e.currentTarget.checked })}
        />
        <label for={`${id}-mainnet`}>Mainnets allowed (unticked: test networks only)</label>
      </div>
      <Field
        id={`${id}-cap`}
        label="Active subscriptions at most"
        hint={props.creating ? defaultHint : 'blank: no limit'}
        error={errors.maxActiveSubscriptions}
      >
        {(aria) => (
          <input
            {...aria}
            inputMode="numeric"
            autoComplete="off"
            value={plan.maxActiveSubscriptions}
            onInput={(e) => onChange({ ...plan, maxActiveSubscriptions: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id={`${id}-rate`} label="Requests per second per API key" hint={props.creating ? defaultHint : undefined} error={errors.requestsPerSecond}>
        {(aria) => (
          <input
            {...aria}
            inputMode="numeric"
            autoComplete="off"
            value={plan.requestsPerSecond}
            onInput={(e) => onChange({ ...plan, requestsPerSecond: e.currentTarget.value })}
          />
        )}
      </Field>
    </>
  );
}
